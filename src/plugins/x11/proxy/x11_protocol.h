// What the X proxy must know of the X11 wire protocol (little-endian clients only): how long a
// message is, which requests build server state that a new server must be given again, which
// requests are answered by a reply, and which extensions the proxy lets a program see.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace stasis::x11 {

inline uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
inline uint32_t get32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24; }
inline void put16(uint8_t* p, uint16_t v) { p[0] = v & 0xff, p[1] = v >> 8; }
inline void put32(uint8_t* p, uint32_t v) { put16(p, v & 0xffff), put16(p + 2, v >> 16); }
inline size_t pad4(size_t n) { return (n + 3) & ~size_t{3}; }

// Core request opcodes the proxy treats specially.
enum CoreOpcode : uint8_t {
  kCreateWindow = 1, kChangeWindowAttributes = 2, kDestroyWindow = 4, kDestroySubwindows = 5,
  kChangeSaveSet = 6, kReparentWindow = 7, kMapWindow = 8, kMapSubwindows = 9, kUnmapWindow = 10,
  kUnmapSubwindows = 11, kConfigureWindow = 12, kInternAtom = 16, kGetAtomName = 17, kChangeProperty = 18,
  kDeleteProperty = 19, kGetInputFocus = 43, kOpenFont = 45, kCloseFont = 46, kCreatePixmap = 53,
  kFreePixmap = 54, kCreateGC = 55, kChangeGC = 56, kCopyGC = 57, kSetDashes = 58,
  kSetClipRectangles = 59, kFreeGC = 60, kCreateColormap = 78, kFreeColormap = 79,
  kCreateCursor = 93, kCreateGlyphCursor = 94, kFreeCursor = 95, kQueryExtension = 98, kListExtensions = 99,
};

// Atoms 1..68 (PRIMARY..WM_TRANSIENT_FOR) are the same in every server.
constexpr uint32_t kLastPredefinedAtom = 68;

// Core requests the server answers with a reply (X11 protocol, chapter 9).
inline bool core_request_has_reply(uint8_t opcode) {
  switch (opcode) {
    case 3: case 14: case 15: case 16: case 17: case 20: case 21: case 23: case 26: case 31:
    case 38: case 39: case 40: case 43: case 44: case 47: case 48: case 49: case 50: case 52:
    case 73: case 83: case 84: case 85: case 86: case 87: case 91: case 92: case 97: case 98:
    case 99: case 101: case 103: case 106: case 108: case 110: case 116: case 117: case 118:
    case 119:
      return true;
    default:
      return false;
  }
}

// Extensions a program may see through the proxy: those whose server state the proxy can give a
// new server again. The others are answered "not present" (the program takes its fallback path:
// Mesa draws with PutImage instead of MIT-SHM, Xlib uses the core keyboard instead of XKB).
enum class Extension { kNone, kBigRequests, kXcMisc, kGlx };
inline Extension extension_named(std::string_view name) {
  if (name == "BIG-REQUESTS") return Extension::kBigRequests;
  if (name == "XC-MISC") return Extension::kXcMisc;
  if (name == "GLX") return Extension::kGlx;
  return Extension::kNone;
}

// GLX minor opcodes (glxproto.h) that create, change or free server state, and those answered
// by a reply. Rendering through the server (indirect GLX: Render, RenderLarge, the "single"
// requests from 101 on) builds GL state in the server: the OpenGL plugin in the program records
// and replays that (src/plugins/opengl); the proxy carries the context and its tag.
enum GlxMinor : uint8_t {
  kGlxRender = 1, kGlxRenderLarge = 2, kGlxCreateContext = 3, kGlxDestroyContext = 4,
  kGlxMakeCurrent = 5, kGlxQueryVersion = 7, kGlxCopyContext = 10, kGlxCreateGlxPixmap = 13,
  kGlxDestroyGlxPixmap = 15, kGlxVendorPrivate = 16, kGlxVendorPrivateWithReply = 17,
  kGlxClientInfo = 20, kGlxCreatePixmap = 22, kGlxDestroyPixmap = 23, kGlxCreateNewContext = 24,
  kGlxMakeContextCurrent = 26, kGlxCreatePbuffer = 27, kGlxDestroyPbuffer = 28,
  kGlxChangeDrawableAttributes = 30, kGlxCreateWindow = 31, kGlxDeleteWindow = 32,
  kGlxSetClientInfoArb = 33, kGlxCreateContextAttribsArb = 34, kGlxSetClientInfo2Arb = 35,
  kGlxFirstSingle = 101,
};
inline bool glx_request_has_reply(uint8_t minor) {
  switch (minor) {
    case 5: case 6: case 7: case 14: case 17: case 18: case 19: case 21: case 25: case 26: case 29:
      return true;
    // the single requests without a reply: NewList, EndList, DeleteLists, FeedbackBuffer,
    // SelectBuffer, PixelStoref, PixelStorei, Flush, DeleteTextures, DeleteQueriesARB
    case 101: case 102: case 103: case 105: case 106: case 109: case 110: case 142: case 144: case 161:
      return false;
    default:
      return minor >= kGlxFirstSingle;  // the other single requests are glGet*, glGen*, glFinish: answered
  }
}
// Where a GLX request carries a context tag (the server's name for "the context current here",
// given in MakeCurrent's reply), or 0 where it carries none.
inline size_t glx_context_tag_offset(uint8_t minor) {
  switch (minor) {
    case kGlxRender: case kGlxRenderLarge: case 8: case 9: case 11: case 12: case kGlxMakeContextCurrent:
      return 4;  // also WaitGL, WaitX, SwapBuffers, UseXFont; MakeContextCurrent's old tag
    case kGlxVendorPrivate: case kGlxVendorPrivateWithReply: return 8;
    case kGlxMakeCurrent: return 12;  // the old tag
    case kGlxCopyContext: return 16;
    default: return minor >= kGlxFirstSingle ? 4 : 0;
  }
}

// Server-to-client messages: errors and events are 32 bytes, replies and generic events say how
// much more follows.
constexpr uint8_t kError = 0, kReply = 1, kKeymapNotify = 11, kExpose = 12, kGenericEvent = 35;
inline size_t server_message_size(const uint8_t* header) {
  const uint8_t type = header[0] & 0x7f;
  if (type == kReply || type == kGenericEvent) return 32 + 4 * size_t{get32(header + 4)};
  return 32;
}

}  // namespace stasis::x11
