#!/usr/bin/env python3
"""A slow SNMP agent for tests: a UDP proxy in front of a real one.

    udp_delay_proxy.py LISTEN_ADDR:PORT UPSTREAM_ADDR:PORT DELAY_S

Every datagram received on LISTEN is forwarded at once to UPSTREAM (from a
socket of its own per client, so that answers find their way back), and every
answer is sent back to its client from LISTEN DELAY_S seconds after it came:
to the client, an agent that takes DELAY_S seconds to answer each request.
Prints "ready" once it listens; runs until killed.
"""
import heapq
import itertools
import select
import socket
import sys
import time


def address(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    listen_at, upstream, delay = address(sys.argv[1]), address(sys.argv[2]), float(sys.argv[3])
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(listen_at)
    upstream_of = {}  # Client address -> its socket to the agent.
    client_of = {}  # That socket -> the client address.
    due = []  # (when, sequence, answer, client): answers held back.
    order = itertools.count()
    print("ready", flush=True)
    while True:
        wait = max(0.0, due[0][0] - time.monotonic()) if due else None
        readable, _, _ = select.select([listener, *client_of], [], [], wait)
        for sock in readable:
            if sock is listener:
                request, client = listener.recvfrom(65535)
                if client not in upstream_of:
                    up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    up.connect(upstream)
                    upstream_of[client] = up
                    client_of[up] = client
                upstream_of[client].send(request)
            else:
                try:
                    answer = sock.recv(65535)
                except ConnectionRefusedError:  # The agent is gone; the client will time out.
                    continue
                heapq.heappush(due, (time.monotonic() + delay, next(order), answer, client_of[sock]))
        while due and due[0][0] <= time.monotonic():
            _, _, answer, client = heapq.heappop(due)
            listener.sendto(answer, client)


if __name__ == "__main__":
    main()
