/* A program holding what the gpu row refuses: `device PATH` keeps a GPU device node open (NVIDIA's
 * /dev/nvidiactl, DRM's /dev/dri/renderD128), `vulkan` has loaded the Vulkan loader. Then it
 * prints "step N" every 50 ms, N = 0..STEPS-1, so the driver can see it run on after the refusal.
 * usage: gpu_holder device PATH STEPS | gpu_holder vulkan - STEPS */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: gpu_holder device PATH STEPS | gpu_holder vulkan - STEPS\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (strcmp(argv[1], "device") == 0) {
    if (open(argv[2], O_RDWR | O_CLOEXEC) < 0) {
      perror(argv[2]);
      return 1;
    }
  } else if (!dlopen("libvulkan.so.1", RTLD_NOW)) {
    fprintf(stderr, "gpu_holder: %s\n", dlerror());
    return 1;
  }
  for (int step = 0; step < atoi(argv[3]); step++) {
    printf("step %d\n", step);
    usleep(50000);
  }
  return 0;
}
