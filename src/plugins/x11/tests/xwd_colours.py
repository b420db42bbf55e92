#!/usr/bin/env python3
"""Counts what an xwd screenshot (ZPixmap, 24 or 32 bits per pixel) shows: pixels that are not
black, and pixels of each of glxgears' three gear colours (red, green, blue dominant).
usage: xwd_colours.py FILE.xwd [OUT.ppm]   prints "nonblack=N red=R green=G blue=B"."""
import struct
import sys


def pixels(path):
    data = open(path, "rb").read()
    fields = struct.unpack(">25I", data[:100])
    header_size, fmt, width, height = fields[0], fields[2], fields[4], fields[5]
    byte_order, bpp, bytes_per_line, ncolors = fields[7], fields[11], fields[12], fields[19]
    masks = fields[14:17]
    if fmt != 2 or bpp not in (24, 32):
        sys.exit(f"{path}: not a 24/32-bit ZPixmap xwd (format {fmt}, {bpp} bits per pixel)")
    start = header_size + 12 * ncolors
    step = bpp // 8
    shifts = [(m & -m).bit_length() - 1 for m in masks]
    for y in range(height):
        row = data[start + y * bytes_per_line: start + y * bytes_per_line + width * step]
        for x in range(width):
            v = int.from_bytes(row[x * step:(x + 1) * step], "little" if byte_order == 0 else "big")
            yield tuple((v & m) >> s for m, s in zip(masks, shifts)), width, height


def main():
    counts = {"nonblack": 0, "red": 0, "green": 0, "blue": 0}
    out = []
    width = height = 0
    for (r, g, b), width, height in pixels(sys.argv[1]):
        out.append(bytes((r, g, b)))
        if r + g + b > 30:
            counts["nonblack"] += 1
        if r > 60 and r > 2 * g and r > 2 * b:
            counts["red"] += 1
        elif g > 60 and g > 2 * r and g > b:
            counts["green"] += 1
        elif b > 60 and b > 2 * r and b > 2 * g:
            counts["blue"] += 1
    if len(sys.argv) > 2:
        with open(sys.argv[2], "wb") as f:
            f.write(b"P6 %d %d 255\n" % (width, height) + b"".join(out))
    print(" ".join(f"{k}={v}" for k, v in counts.items()))


main()
