! ring_fortran STEPS DELAY_MS: the Fortran front's test program (../README.md), built with Open
! MPI's plain mpif90. Every step each rank sends a block of doubles to the next rank (MPI_ISEND,
! 16 KiB: above the eager limits, so it waits for its receive) and sleeps DELAY_MS with the
! message in flight (a checkpoint then drains one message to every rank, and the program holds
! its send request and two started persistent requests across it, which pass a token around a
! periodic MPI_CART_CREATE grid); then it receives the previous rank's block (MPI_IRECV,
! MPI_WAITALL), and runs an MPI_ALLREDUCE of doubles, an MPI_IALLREDUCE in place of integers, an
! MPI_ALLGATHERV and an MPI_BCAST of rank 0's figure on a duplicate of the world; rank 0 prints
! the step's line. The main program
! uses `use mpi`, the step's collectives live in a subroutine that includes mpif.h, and the end
! in one that uses mpi_f08: the three ways of calling MPI from Fortran.
program ring_fortran
  use mpi
  use iso_c_binding, only: c_int
  implicit none
  interface
    integer(c_int) function usleep(microseconds) bind(c, name='usleep')
      import :: c_int
      integer(c_int), value :: microseconds
    end function
  end interface
  integer, parameter :: words = 2048
  double precision :: out(words), in(words)
  integer :: ierr, rank, size, steps, delay, step, i, copy, requests(2), statuses(MPI_STATUS_SIZE, 2), count
  integer :: ring, dims(1), left, right, kind, token(1), passed(1), persistent(2)
  logical :: periods(1)
  integer(kind=MPI_ADDRESS_KIND) :: first, third
  character(len=32) :: argument
  logical :: up

  call MPI_INIT(ierr)
  call MPI_INITIALIZED(up, ierr)
  steps = 20
  delay = 100
  if (command_argument_count() >= 1) then
    call get_command_argument(1, argument)
    read (argument, *) steps
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, argument)
    read (argument, *) delay
  end if
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, copy, ierr)
  if (.not. up .or. copy == MPI_COMM_WORLD .or. copy == MPI_COMM_NULL) stop 'MPI_INITIALIZED or MPI_COMM_DUP'
  ! A periodic 1-D grid, and persistent requests passing a token around it every step (started
  ! and completed each step: held across every checkpoint).
  dims = 0
  periods = .true.
  call MPI_DIMS_CREATE(size, 1, dims, ierr)
  call MPI_CART_CREATE(MPI_COMM_WORLD, 1, dims, periods, .false., ring, ierr)
  call MPI_TOPO_TEST(ring, kind, ierr)
  call MPI_CART_SHIFT(ring, 0, 1, left, right, ierr)
  if (kind /= MPI_CART .or. dims(1) /= size .or. right /= mod(rank + 1, size)) stop 'MPI_CART_*'
  call MPI_GET_ADDRESS(out(1), first, ierr)
  call MPI_GET_ADDRESS(out(3), third, ierr)
  if (third - first /= 16) stop 'MPI_GET_ADDRESS'
  call MPI_SEND_INIT(token, 1, MPI_INTEGER, right, 7, ring, persistent(1), ierr)
  call MPI_RECV_INIT(passed, 1, MPI_INTEGER, left, 7, ring, persistent(2), ierr)
  do step = 0, steps - 1
    do i = 1, words
      out(i) = dble(mod((rank + 1) * i, 97)) + step * 0.5d0
    end do
    token = rank * 10 + step
    call MPI_STARTALL(2, persistent, ierr)
    call MPI_ISEND(out, words, MPI_DOUBLE_PRECISION, mod(rank + 1, size), step, MPI_COMM_WORLD, requests(1), ierr)
    if (delay > 0) ierr = usleep(int(delay * 1000, c_int))
    call MPI_IRECV(in, words, MPI_DOUBLE_PRECISION, mod(rank + size - 1, size), step, MPI_COMM_WORLD, &
                   requests(2), ierr)
    call MPI_WAITALL(2, requests, statuses, ierr)
    call MPI_GET_COUNT(statuses(:, 2), MPI_DOUBLE_PRECISION, count, ierr)
    if (requests(1) /= MPI_REQUEST_NULL .or. requests(2) /= MPI_REQUEST_NULL .or. count /= words .or. &
        statuses(MPI_SOURCE, 2) /= mod(rank + size - 1, size) .or. statuses(MPI_TAG, 2) /= step) &
      stop 'MPI_WAITALL: requests, count or status'
    call MPI_WAITALL(2, persistent, MPI_STATUSES_IGNORE, ierr)
    if (persistent(1) == MPI_REQUEST_NULL .or. passed(1) /= left * 10 + step) stop 'persistent requests'
    call step_collectives(step, rank, size, copy, in, words)
  end do
  call MPI_REQUEST_FREE(persistent(1), ierr)
  call MPI_REQUEST_FREE(persistent(2), ierr)
  call MPI_COMM_FREE(ring, ierr)
  call MPI_COMM_FREE(copy, ierr)
  if (copy /= MPI_COMM_NULL) stop 'MPI_COMM_FREE did not give MPI_COMM_NULL'
  call last_words(rank, size)
end program

! The end through `use mpi_f08` (Open MPI's libmpi_usempif08, which calls libmpi_mpifh's
! ompi_*_f functions, the front's): a reduction of the ranks, a barrier, MPI_Finalize.
subroutine last_words(rank, size)
  use mpi_f08
  implicit none
  integer :: rank, size, summed
  call MPI_Allreduce(rank, summed, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_Finalize()
  if (rank == 0) write (*, '(A,I0,A,I0)') 'done ranks ', size, ' summed ', summed
end subroutine

subroutine step_collectives(step, rank, size, comm, in, words)
  implicit none
  include 'mpif.h'
  integer :: step, rank, size, comm, words, ierr, i, most(2), local(2), request, ranks(64), counts(64), places(64), gathered
  double precision :: in(words), sum, total, figure

  sum = 0
  do i = 1, words
    sum = sum + in(i) * (mod(i - 1, 7) + 1)
  end do
  call MPI_ALLREDUCE(sum, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  local = (/ int(in(1)), rank /)
  most = local
  call MPI_IALLREDUCE(MPI_IN_PLACE, most, 2, MPI_INTEGER, MPI_MAX, comm, request, ierr)
  call MPI_WAIT(request, MPI_STATUS_IGNORE, ierr)
  counts = 1
  places = (/ (i, i = 0, 63) /)
  call MPI_ALLGATHERV(rank * step, 1, MPI_INTEGER, ranks, counts, places, MPI_INTEGER, comm, ierr)
  gathered = 0
  do i = 1, size
    gathered = gathered + ranks(i) * i
  end do
  figure = 0
  if (rank == 0) figure = total / (step + 1)
  call MPI_BCAST(figure, 1, MPI_DOUBLE_PRECISION, 0, comm, ierr)
  if (rank == 0) then
    write (*, '(A,I0,A,F0.3,A,F0.3,A,I0,A,I0,A,I0)') 'step ', step, ' total ', total, ' figure ', figure, &
      ' most ', most(1), ' ', most(2), ' gathered ', gathered
    flush (6)
  end if
end subroutine
