#!/usr/bin/env python3
"""The OpenArena test's helpers (x11_openarena.sh).
  demo_frames.py cut PK3 NAME OUT MESSAGES  the demo NAME in PK3, cut after MESSAGES messages (one
                                            frame each in a timedemo) and ended as a demo ends
  demo_frames.py count AVI                  how many frames an AVI being written holds so far
  demo_frames.py compare REFERENCE AVI      every frame of AVI equal to REFERENCE's at the same number
A dm_71 demo is a run of messages (int32 sequence, int32 length, bytes), ended by -1, -1."""
import hashlib
import struct
import sys
import zipfile


def fail(message):
    print(f"demo_frames.py: {message}", file=sys.stderr)
    sys.exit(1)


def cut(pk3, name, out, messages):
    try:
        data = zipfile.ZipFile(pk3).read(name)
    except (OSError, KeyError, zipfile.BadZipFile) as error:
        fail(f"{pk3}: cannot read {name}: {error}")
    pos = kept = 0
    while kept < messages:
        if pos + 8 > len(data):
            fail(f"{pk3}: {name} is cut short at byte {pos}")
        _, length = struct.unpack_from("<ii", data, pos)
        if length == -1:
            fail(f"{pk3}: {name} has only {kept} messages, not {messages}")
        if length < 0 or pos + 8 + length > len(data):
            fail(f"{pk3}: {name}: message {kept} at byte {pos} has a length of {length}")
        pos += 8 + length
        kept += 1
    with open(out, "wb") as demo:
        demo.write(data[:pos] + struct.pack("<ii", -1, -1))


def frames(path):
    """The digests of the video frames ('00dc' chunks of the movi list) written so far."""
    with open(path, "rb") as f:
        data = f.read()
    pos = data.find(b"movi")
    if pos < 0:
        return []
    pos += 4
    out = []
    while pos + 8 <= len(data):
        tag, size = data[pos:pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        if tag == b"idx1" or pos + 8 + size > len(data):
            break
        if tag == b"00dc":
            out.append(hashlib.sha256(data[pos + 8:pos + 8 + size]).hexdigest())
        pos += 8 + size + (size & 1)
    return out


def compare(reference_path, path):
    reference, restarted = frames(reference_path), frames(path)
    if not reference:
        fail(f"{reference_path}: no video frames")
    if len(restarted) != len(reference):
        fail(f"{path}: {len(restarted)} video frames, the uninterrupted run's {len(reference)}")
    for number, (a, b) in enumerate(zip(reference, restarted)):
        if a != b:
            fail(f"{path}: frame {number} differs from the uninterrupted run's")
    print(f"{len(reference)} frames equal")


if __name__ == "__main__":
    verb = sys.argv[1] if len(sys.argv) > 1 else ""
    if verb == "cut" and len(sys.argv) == 6:
        cut(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif verb == "count" and len(sys.argv) == 3:
        try:
            print(len(frames(sys.argv[2])))
        except OSError:
            print(0)
    elif verb == "compare" and len(sys.argv) == 4:
        compare(sys.argv[2], sys.argv[3])
    else:
        fail("usage: see the docstring")
