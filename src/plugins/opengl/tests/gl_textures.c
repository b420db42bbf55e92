// A GL 1.x program whose state the OpenGL plugin must replay: a 2D texture (a checkerboard and a
// second mip level, its filter and wrap parameters), a display list drawing a textured, lit quad,
// a light, a material, enables and a projection; every frame rotates the modelview, calls the
// list, reads the frame back (glReadPixels) and prints its checksum. With indirect GLX all that
// state is in the X server: after a restart on a new one the frames equal an uninterrupted run's
// only if it was replayed. With a third argument, `unrecorded`, it also asks glXGetProcAddress
// for an entry point the plugin does not record (glPointParameterfARB), so that a checkpoint is
// refused naming it. With `layers` (a direct context, replayed into a fresh one: opengl.fresh_layers)
// it adds what a 1.x-era program layers on its textures: a sampler object on unit 0 overriding the
// texture's filter and wrap; on unit 1 a 3D texture, coordinates generated from object and eye
// planes, a texture matrix turned a little every frame (so only its running product gives the next
// frame) and one texel rewritten each frame (glTexSubImage3D: only the read-back keeps it); on unit
// 2 a cube map, reflection-mapped, with its own texture matrix, a face of it copied from the frame
// each frame (glCopyTexSubImage2D); linear fog; and a GL_SAMPLES_PASSED query around each frame's
// draw whose result is read a frame later, printed with the checksum (so a query ended before the
// checkpoint is read after the restart). usage: gl_textures FRAMES [DELAY_MS [unrecorded|layers]]
#define GL_GLEXT_PROTOTYPES 1
#include <GL/gl.h>
#include <GL/glext.h>
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

static GLuint g_queries[2];  // the layers' queries, used a frame each in turn
// The layers' objects, made once (see the top).
static void make_layers(void) {
  GLuint names[2], sampler;
  glGenTextures(2, names);
  glGenSamplers(1, &sampler);
  glSamplerParameteri(sampler, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glSamplerParameteri(sampler, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glSamplerParameteri(sampler, GL_TEXTURE_WRAP_S, GL_MIRRORED_REPEAT);
  glBindSampler(0, sampler);

  static unsigned char volume[4][8][8][4];
  for (int z = 0; z < 4; z++)
    for (int y = 0; y < 8; y++)
      for (int x = 0; x < 8; x++) {
        unsigned char* p = volume[z][y][x];
        p[0] = (unsigned char)(x * 32), p[1] = (unsigned char)(y * 32), p[2] = (unsigned char)(z * 64), p[3] = 255;
      }
  glActiveTexture(GL_TEXTURE1);
  glBindTexture(GL_TEXTURE_3D, names[0]);
  glTexParameteri(GL_TEXTURE_3D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_3D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexImage3D(GL_TEXTURE_3D, 0, GL_RGBA, 8, 8, 4, 0, GL_RGBA, GL_UNSIGNED_BYTE, volume);
  glEnable(GL_TEXTURE_3D);
  glTexEnvi(GL_TEXTURE_ENV, GL_TEXTURE_ENV_MODE, GL_ADD);
  const GLfloat s_plane[4] = {0.5f, 0, 0, 0.5f}, t_plane[4] = {0, 0.5f, 0, 0.5f}, r_plane[4] = {0.2f, 0.3f, 0.1f, 0.9f};
  glTexGeni(GL_S, GL_TEXTURE_GEN_MODE, GL_OBJECT_LINEAR);
  glTexGenfv(GL_S, GL_OBJECT_PLANE, s_plane);
  glTexGeni(GL_T, GL_TEXTURE_GEN_MODE, GL_OBJECT_LINEAR);
  glTexGenfv(GL_T, GL_OBJECT_PLANE, t_plane);
  glPushMatrix();  // an eye plane is taken through the modelview of its moment
  glTranslatef(0.3f, 0, -2);
  glTexGeni(GL_R, GL_TEXTURE_GEN_MODE, GL_EYE_LINEAR);
  glTexGenfv(GL_R, GL_EYE_PLANE, r_plane);
  glPopMatrix();
  glEnable(GL_TEXTURE_GEN_S), glEnable(GL_TEXTURE_GEN_T), glEnable(GL_TEXTURE_GEN_R);

  static unsigned char face[4 * 4 * 4];
  glActiveTexture(GL_TEXTURE2);
  glBindTexture(GL_TEXTURE_CUBE_MAP, names[1]);
  glTexParameteri(GL_TEXTURE_CUBE_MAP, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_CUBE_MAP, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  for (int f = 0; f < 6; f++) {
    for (int i = 0; i < 4 * 4 * 4; i++) face[i] = (unsigned char)(f * 40 + i * 3);
    glTexImage2D(GL_TEXTURE_CUBE_MAP_POSITIVE_X + f, 0, GL_RGBA, 4, 4, 0, GL_RGBA, GL_UNSIGNED_BYTE, face);
  }
  glEnable(GL_TEXTURE_CUBE_MAP);
  glTexEnvi(GL_TEXTURE_ENV, GL_TEXTURE_ENV_MODE, GL_MODULATE);
  for (GLenum coord = GL_S; coord <= GL_R; coord++) glTexGeni(coord, GL_TEXTURE_GEN_MODE, GL_REFLECTION_MAP);
  glEnable(GL_TEXTURE_GEN_S), glEnable(GL_TEXTURE_GEN_T), glEnable(GL_TEXTURE_GEN_R);
  glMatrixMode(GL_TEXTURE);
  glScalef(1, -1, 0.5f);
  glMatrixMode(GL_MODELVIEW);
  glActiveTexture(GL_TEXTURE0);

  const GLfloat fog_colour[4] = {0.5f, 0.6f, 0.7f, 1};
  glEnable(GL_FOG);
  glFogi(GL_FOG_MODE, GL_LINEAR);
  glFogf(GL_FOG_START, 3.2f);
  glFogf(GL_FOG_END, 5.0f);
  glFogfv(GL_FOG_COLOR, fog_colour);

  glGenQueries(2, g_queries);
}

// Each frame's changes to the layers before its draw: unit 1's texture matrix turned on by a
// step, one texel of the 3D texture rewritten.
static void turn_layers(int frame) {
  glActiveTexture(GL_TEXTURE1);
  glMatrixMode(GL_TEXTURE);
  glTranslatef(0.5f, 0.5f, 0);
  glRotatef(7, 0, 0, 1);
  glTranslatef(-0.5f, -0.5f, 0);
  glMatrixMode(GL_MODELVIEW);
  const unsigned char texel[4] = {(unsigned char)(frame * 37), (unsigned char)(frame * 11), (unsigned char)(255 - frame), 255};
  glTexSubImage3D(GL_TEXTURE_3D, 0, frame % 8, (frame / 8) % 8, (frame / 64) % 4, 1, 1, 1, GL_RGBA, GL_UNSIGNED_BYTE, texel);
  glActiveTexture(GL_TEXTURE0);
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
  const int layers = argc > 3 && strcmp(argv[3], "layers") == 0;
  const char* version = (const char*)glGetString(GL_VERSION);
  if (layers && (!version || atof(version) < 3.3)) {
    fprintf(stderr, "gl_textures: layers need OpenGL 3.3 (sampler objects); this context has %s\n", version ? version : "none");
    return 1;
  }
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
  if (layers) make_layers();

  static unsigned char pixels[kSize * kSize * 4];
  for (int frame = 0; frame < frames; frame++) {
    GLuint passed = 0;  // the samples the previous frame's quad passed
    if (layers && frame > 0) glGetQueryObjectuiv(g_queries[(frame - 1) & 1], GL_QUERY_RESULT, &passed);
    if (layers) turn_layers(frame);
    glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
    if (layers) glBeginQuery(GL_SAMPLES_PASSED, g_queries[frame & 1]);
    glPushMatrix();
    glTranslatef(0, 0, -4);
    glRotatef((float)(frame % 360), 0.3f, 1, 0.2f);
    glCallList(quad);
    glPopMatrix();
    if (layers) {
      glEndQuery(GL_SAMPLES_PASSED);
      glActiveTexture(GL_TEXTURE2);  // a face of the cube map from what was drawn
      glCopyTexSubImage2D(GL_TEXTURE_CUBE_MAP_POSITIVE_X + frame % 6, 0, 0, 0, 24 + frame % 16, 24, 4, 4);
      glActiveTexture(GL_TEXTURE0);
    }
    glReadPixels(0, 0, kSize, kSize, GL_RGBA, GL_UNSIGNED_BYTE, pixels);
    if (layers && glGetError() != GL_NO_ERROR) { fprintf(stderr, "gl_textures: a GL error\n"); return 1; }
    unsigned long sum = 0;
    for (int i = 0; i < kSize * kSize * 4; i++) sum = sum * 31 + pixels[i];
    if (layers) printf("step %d %016lx passed %u\n", frame, sum, passed);
    else printf("step %d %016lx\n", frame, sum);
    fflush(stdout);
    struct timespec pause = {0, delay_ms * 1000000L};
    nanosleep(&pause, NULL);
  }
  printf("done\n");
  return 0;
}
