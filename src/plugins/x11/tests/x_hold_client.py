"""An X client that completes its connection set-up on display N, prints "held", and keeps the
connection until its standard input closes (x11_proxy_server_reset.sh: the last client to leave).
usage: x_hold_client.py N"""
import socket
import struct
import sys

connection = socket.socket(socket.AF_UNIX)
connection.connect("/tmp/.X11-unix/X" + sys.argv[1])
# Little-endian set-up, protocol 11.0, no authorization.
connection.sendall(struct.pack("<cxHHHHxx", b"l", 11, 0, 0, 0))
answer = connection.recv(8)
if len(answer) < 8 or answer[0] != 1:
    sys.exit(f"display :{sys.argv[1]} refused the set-up: {answer!r}")
print("held", flush=True)
sys.stdin.read()
