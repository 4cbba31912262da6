#!/usr/bin/env python3
"""A one-shot TCP transfer to check that the testbed's links are shaped,
without iperf: `serve` receives one connection to its end and acknowledges the
byte count; `send` pushes N bytes to it and prints the rate it took, from
connect to acknowledgement.

Usage (each side in its namespace, e.g. through testbed.py exec):
  tcp_transfer.py serve PORT            # exits after one transfer
  tcp_transfer.py send ADDR PORT BYTES  # prints: BYTES bytes in S s = R Mbit/s
"""

import socket
import struct
import sys
import time

CHUNK = 64 * 1024


def serve(port: int) -> None:
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("0.0.0.0", port))
        listener.listen(1)
        print("listening", flush=True)  # the caller waits for this line
        conn, _ = listener.accept()
        with conn:
            total = 0
            while True:
                data = conn.recv(CHUNK)
                if not data:
                    break
                total += len(data)
            conn.sendall(struct.pack("!Q", total))


def send(addr: str, port: int, size: int) -> None:
    payload = bytes(CHUNK)
    start = time.monotonic()
    with socket.create_connection((addr, port), timeout=60) as conn:
        left = size
        while left > 0:
            n = min(left, CHUNK)
            conn.sendall(payload[:n])
            left -= n
        conn.shutdown(socket.SHUT_WR)
        ack = b""
        while len(ack) < 8:
            data = conn.recv(8 - len(ack))
            if not data:
                sys.exit("tcp_transfer: the server closed without acknowledging")
            ack += data
    seconds = time.monotonic() - start
    (received,) = struct.unpack("!Q", ack)
    if received != size:
        sys.exit(f"tcp_transfer: sent {size} bytes but the server received {received}")
    print(f"{size} bytes in {seconds:.3f} s = {size * 8 / seconds / 1e6:.1f} Mbit/s")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    elif len(sys.argv) == 5 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
