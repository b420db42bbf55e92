/* Messages taken out of the library by the drain (drain_queue.h). */
#include "drain_queue.h"

#include <stddef.h>
#include <sys/mman.h>

/* Each message its own mapping, never malloc: the drain runs in the checkpoint, while the
 * program's threads are stopped, maybe inside malloc with its lock held. */
StasisMpiDrained *stasis_mpi_drained_new(int comm, int source, int tag, int bytes) {
  if (bytes < 0) return NULL;
  size_t length = sizeof(StasisMpiDrained) + (size_t)bytes;
  StasisMpiDrained *message = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (message == MAP_FAILED) return NULL;
  message->next = NULL;
  message->comm = comm;
  message->source = source;
  message->tag = tag;
  message->bytes = bytes;
  return message;
}

void stasis_mpi_drained_free(StasisMpiDrained *message) {
  if (message) munmap(message, sizeof(StasisMpiDrained) + (size_t)message->bytes);
}

void stasis_mpi_drain_keep(StasisMpiDrainQueue *queue, StasisMpiDrained *message) {
  message->next = NULL;
  if (queue->tail) queue->tail->next = message;
  else queue->head = message;
  queue->tail = message;
  queue->count++;
}

static int matches(const StasisMpiDrained *message, int comm, int source, int tag) {
  return message->comm == comm && (source == -1 || message->source == source) && (tag == -1 || message->tag == tag);
}

const StasisMpiDrained *stasis_mpi_drain_find(const StasisMpiDrainQueue *queue, int comm, int source, int tag) {
  for (const StasisMpiDrained *message = queue->head; message; message = message->next)
    if (matches(message, comm, source, tag)) return message;
  return NULL;
}

int stasis_mpi_drain_has(const StasisMpiDrainQueue *queue, int comm, int source, int tag) {
  return stasis_mpi_drain_find(queue, comm, source, tag) != NULL;
}

StasisMpiDrained *stasis_mpi_drain_take(StasisMpiDrainQueue *queue, int comm, int source, int tag) {
  StasisMpiDrained *previous = NULL;
  for (StasisMpiDrained *message = queue->head; message; previous = message, message = message->next) {
    if (!matches(message, comm, source, tag)) continue;
    if (previous) previous->next = message->next;
    else queue->head = message->next;
    if (queue->tail == message) queue->tail = previous;
    queue->count--;
    message->next = NULL;
    return message;
  }
  return NULL;
}
