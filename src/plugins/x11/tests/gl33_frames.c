/* An OpenGL 3.3 core-profile program in a window (GLX, Xlib): each step renders a few triangles
 * into a texture through a framebuffer object (render-to-texture), then draws that texture onto
 * the window with a second GLSL program; both programs read a uniform buffer (UBO) the step
 * rewrites, and both draws go through vertex array objects. The window's frame is read back with
 * glReadPixels and its FNV-1a checksum printed: "step N checksum X". A restart that lost or
 * changed any of that GL or X state prints other checksums, or none. With "trails" the texture
 * is never cleared: each frame draws over the ones before, so the texture's contents (written by
 * the GPU, in no call's arguments) are part of every later checksum; it also asks
 * glXGetProcAddressARB for glPointSize, which the OpenGL plugin does not record, and never calls
 * it (a program that only asks must not be refused).
 * usage: gl33_frames STEPS DELAY_MS [trails] */
#define GL_GLEXT_PROTOTYPES 1
#include <GL/gl.h>
#include <GL/glext.h>
#include <GL/glx.h>
#include <X11/Xlib.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kWidth = 128, kHeight = 128, kTexture = 64 };

static void die(const char* what) {
  fprintf(stderr, "gl33_frames: %s\n", what);
  exit(1);
}

static GLuint compile(GLenum kind, const char* source) {
  GLuint shader = glCreateShader(kind);
  glShaderSource(shader, 1, &source, NULL);
  glCompileShader(shader);
  GLint ok = 0;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[1024];
    glGetShaderInfoLog(shader, sizeof log, NULL, log);
    fprintf(stderr, "gl33_frames: shader: %s\n", log);
    exit(1);
  }
  return shader;
}

static GLuint link_program(const char* vertex, const char* fragment) {
  GLuint program = glCreateProgram();
  GLuint v = compile(GL_VERTEX_SHADER, vertex), f = compile(GL_FRAGMENT_SHADER, fragment);
  glAttachShader(program, v);
  glAttachShader(program, f);
  glBindAttribLocation(program, 0, "position");
  glBindAttribLocation(program, 1, "colour");
  glLinkProgram(program);
  GLint ok = 0;
  glGetProgramiv(program, GL_LINK_STATUS, &ok);
  if (!ok) die("a GLSL program does not link");
  glDeleteShader(v);  /* the program keeps them: state a replay must not lose */
  glDeleteShader(f);
  glUniformBlockBinding(program, glGetUniformBlockIndex(program, "Step"), 0);
  return program;
}

static const char kSceneVertex[] =
    "#version 330 core\n"
    "layout(std140) uniform Step { vec4 tint; vec4 turn; };\n"
    "in vec2 position; in vec3 colour; out vec3 v_colour;\n"
    "void main() {\n"
    "  mat2 r = mat2(turn.x, turn.y, -turn.y, turn.x);\n"
    "  gl_Position = vec4(r * position * turn.z, 0.0, 1.0);\n"
    "  v_colour = colour;\n"
    "}\n";
static const char kSceneFragment[] =
    "#version 330 core\n"
    "layout(std140) uniform Step { vec4 tint; vec4 turn; };\n"
    "in vec3 v_colour; out vec4 fragment;\n"
    "void main() { fragment = vec4(v_colour * tint.rgb, 1.0); }\n";
static const char kCompositeVertex[] =
    "#version 330 core\n"
    "in vec2 position; out vec2 uv;\n"
    "void main() { uv = position * 0.5 + 0.5; gl_Position = vec4(position, 0.0, 1.0); }\n";
static const char kCompositeFragment[] =
    "#version 330 core\n"
    "layout(std140) uniform Step { vec4 tint; vec4 turn; };\n"
    "uniform sampler2D scene; in vec2 uv; out vec4 fragment;\n"
    "void main() {\n"
    "  vec4 a = texture(scene, uv), b = texture(scene, uv.yx * 1.5 + turn.w);\n"
    "  fragment = vec4(mix(a.rgb, b.bgr, 0.3), 1.0);\n"
    "}\n";

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 4 && strcmp(argv[3], "trails") == 0)) die("usage: gl33_frames STEPS DELAY_MS [trails]");
  const int steps = atoi(argv[1]), delay_ms = atoi(argv[2]), trails = argc == 4;
  setvbuf(stdout, NULL, _IOLBF, 0);

  Display* display = XOpenDisplay(NULL);
  if (!display) die("cannot open the X display (DISPLAY)");
  static const int fb_attributes[] = {GLX_X_RENDERABLE, True, GLX_DRAWABLE_TYPE, GLX_WINDOW_BIT,
                                      GLX_RENDER_TYPE, GLX_RGBA_BIT, GLX_DOUBLEBUFFER, True,
                                      GLX_RED_SIZE, 8, GLX_GREEN_SIZE, 8, GLX_BLUE_SIZE, 8,
                                      GLX_DEPTH_SIZE, 24, None};
  int count = 0;
  GLXFBConfig* configs = glXChooseFBConfig(display, DefaultScreen(display), fb_attributes, &count);
  if (!configs || count == 0) die("no double-buffered RGB8 framebuffer configuration");
  XVisualInfo* visual = glXGetVisualFromFBConfig(display, configs[0]);
  Window root = RootWindow(display, visual->screen);
  XSetWindowAttributes attributes = {0};
  attributes.colormap = XCreateColormap(display, root, visual->visual, AllocNone);
  attributes.event_mask = ExposureMask | StructureNotifyMask;
  Window window = XCreateWindow(display, root, 0, 0, kWidth, kHeight, 0, visual->depth, InputOutput,
                                visual->visual, CWColormap | CWEventMask, &attributes);
  XStoreName(display, window, "gl33_frames");
  XMapWindow(display, window);
  for (XEvent e;;) {
    XNextEvent(display, &e);
    if (e.type == MapNotify) break;
  }

  typedef GLXContext (*CreateContextAttribs)(Display*, GLXFBConfig, GLXContext, Bool, const int*);
  CreateContextAttribs create = (CreateContextAttribs)glXGetProcAddressARB((const GLubyte*)"glXCreateContextAttribsARB");
  static const int context_attributes[] = {GLX_CONTEXT_MAJOR_VERSION_ARB, 3, GLX_CONTEXT_MINOR_VERSION_ARB, 3,
                                           GLX_CONTEXT_PROFILE_MASK_ARB, GLX_CONTEXT_CORE_PROFILE_BIT_ARB, None};
  GLXContext context = create ? create(display, configs[0], NULL, True, context_attributes) : NULL;
  if (!context) die("no OpenGL 3.3 core-profile context");
  if (!glXMakeCurrent(display, window, context)) die("glXMakeCurrent failed");

  if (trails && !glXGetProcAddressARB((const GLubyte*)"glPointSize")) die("no glPointSize");
  GLuint scene = link_program(kSceneVertex, kSceneFragment);
  GLuint composite = link_program(kCompositeVertex, kCompositeFragment);
  glUseProgram(composite);
  glUniform1i(glGetUniformLocation(composite, "scene"), 0);

  /* Three triangles (x, y, r, g, b) and a full-window quad (x, y). */
  static const GLfloat triangles[] = {
      0.0f, 0.9f, 1, 0, 0,   -0.8f, -0.5f, 0, 1, 0,  0.8f, -0.5f, 0, 0, 1,
      -0.9f, 0.9f, 1, 1, 0,  -0.3f, 0.9f, 0, 1, 1,   -0.6f, 0.3f, 1, 0, 1,
      0.2f, -0.2f, 1, 1, 1,  0.9f, 0.0f, 0.5f, 0.2f, 0.1f, 0.5f, 0.7f, 0.2f, 0.4f, 0.9f};
  static const GLfloat quad[] = {-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1};
  GLuint arrays[2], buffers[3];
  glGenVertexArrays(2, arrays);
  glGenBuffers(3, buffers);
  glBindVertexArray(arrays[0]);
  glBindBuffer(GL_ARRAY_BUFFER, buffers[0]);
  glBufferData(GL_ARRAY_BUFFER, sizeof triangles, triangles, GL_STATIC_DRAW);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 5 * sizeof(GLfloat), (void*)0);
  glVertexAttribPointer(1, 3, GL_FLOAT, GL_FALSE, 5 * sizeof(GLfloat), (void*)(2 * sizeof(GLfloat)));
  glEnableVertexAttribArray(0);
  glEnableVertexAttribArray(1);
  glBindVertexArray(arrays[1]);
  glBindBuffer(GL_ARRAY_BUFFER, buffers[1]);
  glBufferData(GL_ARRAY_BUFFER, sizeof quad, quad, GL_STATIC_DRAW);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 2 * sizeof(GLfloat), (void*)0);
  glEnableVertexAttribArray(0);
  glBindVertexArray(0);
  glBindBuffer(GL_UNIFORM_BUFFER, buffers[2]);
  glBufferData(GL_UNIFORM_BUFFER, 8 * sizeof(GLfloat), NULL, GL_DYNAMIC_DRAW);
  glBindBufferBase(GL_UNIFORM_BUFFER, 0, buffers[2]);

  GLuint texture, framebuffer;
  glGenTextures(1, &texture);
  glBindTexture(GL_TEXTURE_2D, texture);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, kTexture, kTexture, 0, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_REPEAT);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_MIRRORED_REPEAT);
  glGenFramebuffers(1, &framebuffer);
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, texture, 0);
  if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) die("the framebuffer object is incomplete");

  static unsigned char pixels[kWidth * kHeight * 4];
  for (int step = 0; step < steps; step++) {
    while (XPending(display)) {  /* Expose, ConfigureNotify: nothing to do but take them */
      XEvent e;
      XNextEvent(display, &e);
    }
    const float angle = step * 0.07f;
    const GLfloat uniforms[8] = {0.6f + 0.4f * sinf(step * 0.11f), 0.6f + 0.4f * cosf(step * 0.13f), 0.8f, 1,
                                 cosf(angle), sinf(angle), 0.7f + 0.2f * sinf(step * 0.05f), (step % 16) / 16.0f};
    glBindBuffer(GL_UNIFORM_BUFFER, buffers[2]);
    glBufferSubData(GL_UNIFORM_BUFFER, 0, sizeof uniforms, uniforms);

    glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);  /* the scene, into the texture */
    glViewport(0, 0, kTexture, kTexture);
    glClearColor((step % 7) / 7.0f, 0.1f, 0.2f, 1);
    if (!trails || step == 0) glClear(GL_COLOR_BUFFER_BIT);
    glUseProgram(scene);
    glBindVertexArray(arrays[0]);
    glDrawArrays(GL_TRIANGLES, 0, 9);

    glBindFramebuffer(GL_FRAMEBUFFER, 0);  /* the texture, onto the window */
    glViewport(0, 0, kWidth, kHeight);
    glClearColor(0, 0, 0, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    glUseProgram(composite);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, texture);
    glBindVertexArray(arrays[1]);
    glDrawArrays(GL_TRIANGLES, 0, 6);

    glReadPixels(0, 0, kWidth, kHeight, GL_RGBA, GL_UNSIGNED_BYTE, pixels);
    if (glGetError() != GL_NO_ERROR) die("a GL error");
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof pixels; i++) hash = (hash ^ pixels[i]) * 1099511628211ull;
    printf("step %d checksum %016llx\n", step, (unsigned long long)hash);
    glXSwapBuffers(display, window);
    usleep(delay_ms * 1000);
  }
  glXMakeCurrent(display, None, NULL);
  glXDestroyContext(display, context);
  XDestroyWindow(display, window);
  XCloseDisplay(display);
  printf("done\n");
  return 0;
}
