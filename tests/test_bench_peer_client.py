"""bench-peer's load generator reads each answer whole from what the connection received
(benchmarks/_peer_client.py ``parse_answer``), over a keep-alive connection it opens again
after the server closed it."""

import asyncio
import sys

import pytest

from tests.conftest import REPO_DIR

sys.path.insert(0, str(REPO_DIR / "benchmarks"))
from _peer_client import HttpConnection, parse_answer

LENGTH_ANSWER = (
    b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nSet-Cookie: session=abc; Path=/; HttpOnly\r\n"
    b'Content-Length: 12\r\n\r\n{"ok": true}'
)
CHUNKED_ANSWER = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=1\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n"


def test_an_answer_with_a_length_is_read_whole_with_its_headers_and_cookies():
    (status, headers, cookies, body), used = parse_answer(LENGTH_ANSWER + b"HTTP/1.1 next")
    assert (status, body, used) == (201, b'{"ok": true}', len(LENGTH_ANSWER))
    assert headers["content-type"] == "application/json"
    assert cookies == {"session": "abc"}


def test_a_chunked_answer_is_joined():
    (status, _, _, body), used = parse_answer(CHUNKED_ANSWER)
    assert (status, body, used) == (200, b"Wikipedia", len(CHUNKED_ANSWER))


@pytest.mark.parametrize("answer", [LENGTH_ANSWER, CHUNKED_ANSWER])
def test_an_answer_cut_anywhere_is_not_read_until_it_is_whole(answer):
    for cut in range(len(answer)):
        assert parse_answer(answer[:cut]) is None, cut


def test_what_is_not_an_answer_is_refused():
    with pytest.raises(ValueError):
        parse_answer(b"HTTP/1.1 abc\r\n\r\n")


def test_requests_share_a_connection_until_the_server_closes_it():
    async def scenario():
        connections = []

        async def serve(reader, writer):
            connections.append(writer)
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                body = await reader.readexactly(length)
                closing = body == b"bye"
                extra = b"Connection: close\r\n" if closing else b""
                writer.write(b"HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s" % (extra, len(body), body))
                await writer.drain()
                if closing:
                    writer.close()
                    return

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = HttpConnection(port)
        answers = [await client.request("POST", "/", body=text) for text in (b"one", b"two", b"bye", b"again")]
        client.close()
        server.close()
        await server.wait_closed()
        return answers, len(connections)

    answers, opened = asyncio.run(scenario())
    assert [body for _, _, body in answers] == [b"one", b"two", b"bye", b"again"]
    assert opened == 2  # the fourth request on a new connection after the server's close
