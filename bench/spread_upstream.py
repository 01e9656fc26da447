#!/usr/bin/env python3
"""An upstream whose chat streams arrive apart, as a model's do: each SSE event of the
fixed stream (bench/nginx-lib.sh's $SSE, read from the environment) is written on its
own, the socket flushed between two (TCP_NODELAY), so a proxy reads one event per read
instead of the whole stream at once. For bench/cpu.sh's spread-apart case; its own CPU is
not what the bench counts.
    SSE="$SSE" python3 bench/spread_upstream.py PORT
"""
import asyncio
import os
import socket
import sys

# The stream as nginx serves it: its line ends are a backslash and an `n` in the variable.
STREAM = os.environ["SSE"].replace("\\n", "\n")
EVENTS = [e + "\n\n" for e in STREAM.split("\n\n") if e]
HEAD = (
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    "transfer-encoding: chunked\r\n\r\n"
)


async def serve(reader, writer):
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            writer.write(HEAD.encode())
            for event in EVENTS:
                data = event.encode()
                writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                await writer.drain()
                # Another turn of the loop: each event leaves in a write of its own.
                await asyncio.sleep(0)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", int(sys.argv[1]), backlog=1024)
    async with server:
        await server.serve_forever()


asyncio.run(main())
