/* An X client that does nothing but round trips (XGetInputFocus, XGetGeometry, XInternAtom of a
 * name of its own) and prints "step N" after each 500, N = 0..STEPS-1: a checkpoint nearly always
 * finds a request whose reply has not come, which the X proxy must ask the new server again, with
 * the sequence numbers Xlib expects (else Xlib stops on "sequence lost" or waits forever). Each
 * step also sets its GC's colour and fills the window: the proxy's log must not grow with that.
 * usage: round_trips STEPS */
#include <X11/Xlib.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: round_trips STEPS\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  Display* display = XOpenDisplay(NULL);
  if (!display) {
    fprintf(stderr, "round_trips: cannot open the X display (DISPLAY)\n");
    return 1;
  }
  Window window = XCreateSimpleWindow(display, DefaultRootWindow(display), 0, 0, 64, 48, 0, 0, 0);
  XMapWindow(display, window);
  GC gc = XCreateGC(display, window, 0, NULL);
  for (int step = 0; step < atoi(argv[1]); step++) {
    XSetForeground(display, gc, (unsigned long)step * 0x010203);
    XFillRectangle(display, window, gc, 0, 0, 64, 48);
    unsigned long sum = 0;
    for (int i = 0; i < 500; i++) {
      Window focus, root;
      int revert, x, y;
      unsigned width, height, border, depth;
      XGetInputFocus(display, &focus, &revert);
      XGetGeometry(display, window, &root, &x, &y, &width, &height, &border, &depth);
      char name[32];
      snprintf(name, sizeof name, "STASIS_ROUND_TRIP_%d", i % 7);
      sum += width + height + depth + (XInternAtom(display, name, False) != None);
    }
    printf("step %d %lu\n", step, sum);
  }
  XCloseDisplay(display);
  printf("done\n");
  return 0;
}
