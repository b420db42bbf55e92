// A GL 1.x program whose state the OpenGL plugin must replay: a 2D texture (a checkerboard and a
// second mip level, its filter and wrap parameters), a display list drawing a textured, lit quad,
// a light, a material, enables and a projection; every frame rotates the modelview, calls the
// list, reads the frame back (glReadPixels) and prints its checksum. With indirect GLX all that
// state is in the X server: after a restart on a new one the frames equal an uninterrupted run's
// only if it was replayed. With a third argument, `unrecorded`, it also asks glXGetProcAddress
// for an entry point the plugin does not record (glPointParameterfARB), so that a checkpoint is
// refused naming it. usage: gl_textures FRAMES [DELAY_MS [unrecorded]]
#include <GL/gl.h>
#include <GL/glx.h>
#include <X11/Xlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kSize = 64 };

static void make_texture(GLuint name) {
  static unsigned char level0[16 * 16 * 4], level1[8 * 8 * 4];
  for (int y = 0; y < 16; y++)
    for (int x = 0; x < 16; x++) {
      unsigned char* p = level0 + 4 * (y * 16 + x);
      const int on = ((x / 4) + (y / 4)) & 1;
      p[0] = on ? 230 : 20, p[1] = on ? 40 : 200, p[2] = (unsigned char)(x * 16), p[3] = 255;
    }
  for (int i = 0; i < 8 * 8 * 4; i++) level1[i] = (unsigned char)(i * 7);
  glBindTexture(GL_TEXTURE_2D, name);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_REPEAT);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, 16, 16, 0, GL_RGBA, GL_UNSIGNED_BYTE, level0);
  glTexImage2D(GL_TEXTURE_2D, 1, GL_RGBA, 8, 8, 0, GL_RGBA, GL_UNSIGNED_BYTE, level1);
  glTexEnvi(GL_TEXTURE_ENV, GL_TEXTURE_ENV_MODE, GL_MODULATE);
}

int main(int argc, char** argv) {
  const int frames = argc > 1 ? atoi(argv[1]) : 200;
  const int delay_ms = argc > 2 ? atoi(argv[2]) : 20;
  Display* dpy = XOpenDisplay(NULL);
  if (!dpy) { fprintf(stderr, "gl_textures: cannot open the display\n"); return 1; }
  int attributes[] = {GLX_RGBA, GLX_RED_SIZE, 8, GLX_GREEN_SIZE, 8, GLX_BLUE_SIZE, 8, GLX_DEPTH_SIZE, 16, None};
  XVisualInfo* visual = glXChooseVisual(dpy, DefaultScreen(dpy), attributes);
  if (!visual) { fprintf(stderr, "gl_textures: no RGB visual with depth\n"); return 1; }
  XSetWindowAttributes wa = {0};
  wa.colormap = XCreateColormap(dpy, RootWindow(dpy, visual->screen), visual->visual, AllocNone);
  Window window = XCreateWindow(dpy, RootWindow(dpy, visual->screen), 0, 0, kSize, kSize, 0, visual->depth,
                                InputOutput, visual->visual, CWColormap, &wa);
  XMapWindow(dpy, window);
  GLXContext context = glXCreateContext(dpy, visual, NULL, True);
  if (!context || !glXMakeCurrent(dpy, window, context)) { fprintf(stderr, "gl_textures: no GL context\n"); return 1; }
  const char* renderer = (const char*)glGetString(GL_RENDERER);
  if (!renderer || !*renderer) {  // an X server whose GL draws nothing: every frame would be equal
    fprintf(stderr, "gl_textures: GL renders nothing here (no renderer string)\n");
    return 1;
  }
  printf("indirect %d\n", !glXIsDirect(dpy, context));
  if (argc > 3 && strcmp(argv[3], "unrecorded") == 0) {
    void (*point_parameter)(GLenum, GLfloat) =
        (void (*)(GLenum, GLfloat))glXGetProcAddressARB((const GLubyte*)"glPointParameterfARB");
    if (point_parameter) point_parameter(0x8128 /* GL_POINT_FADE_THRESHOLD_SIZE */, 2.0f);
  }

  glViewport(0, 0, kSize, kSize);
  glMatrixMode(GL_PROJECTION);
  glLoadIdentity();
  glFrustum(-1, 1, -1, 1, 2, 10);
  glMatrixMode(GL_MODELVIEW);
  glLoadIdentity();
  const GLfloat light_position[4] = {1, 2, 3, 0}, white[4] = {1, 1, 1, 1}, grey[4] = {0.3f, 0.3f, 0.3f, 1};
  glLightfv(GL_LIGHT0, GL_POSITION, light_position);
  glLightfv(GL_LIGHT0, GL_DIFFUSE, white);
  glLightModelfv(GL_LIGHT_MODEL_AMBIENT, grey);
  glEnable(GL_LIGHTING);
  glEnable(GL_LIGHT0);
  glEnable(GL_DEPTH_TEST);
  glEnable(GL_TEXTURE_2D);
  glClearColor(0.1f, 0.1f, 0.3f, 1);
  make_texture(7);
  const GLuint quad = glGenLists(1);
  glNewList(quad, GL_COMPILE);
  const GLfloat material[4] = {0.9f, 0.8f, 0.7f, 1};
  glMaterialfv(GL_FRONT_AND_BACK, GL_AMBIENT_AND_DIFFUSE, material);
  glBegin(GL_QUADS);
  glNormal3f(0, 0, 1);
  glTexCoord2f(0, 0), glVertex3f(-1, -1, 0);
  glTexCoord2f(2, 0), glVertex3f(1, -1, 0);
  glTexCoord2f(2, 2), glVertex3f(1, 1, 0);
  glTexCoord2f(0, 2), glVertex3f(-1, 1, 0);
  glEnd();
  glEndList();

  static unsigned char pixels[kSize * kSize * 4];
  for (int frame = 0; frame < frames; frame++) {
    glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
    glPushMatrix();
    glTranslatef(0, 0, -4);
    glRotatef((float)(frame % 360), 0.3f, 1, 0.2f);
    glCallList(quad);
    glPopMatrix();
    glReadPixels(0, 0, kSize, kSize, GL_RGBA, GL_UNSIGNED_BYTE, pixels);
    unsigned long sum = 0;
    for (int i = 0; i < kSize * kSize * 4; i++) sum = sum * 31 + pixels[i];
    printf("step %d %016lx\n", frame, sum);
    fflush(stdout);
    struct timespec pause = {0, delay_ms * 1000000L};
    nanosleep(&pause, NULL);
  }
  printf("done\n");
  return 0;
}
