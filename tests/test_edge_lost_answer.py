"""A JoinMatch whose answer is lost on the way back (the server committed it, the client
never heard), retried with the same request id: the same seat and token, no second seat
taken, and the match starts with every seat playable (issue 14, point 8). The answer is
lost for real: a TCP relay between client and replica stops passing the replica's bytes."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import grpc
from mogames.common.v1 import common_pb2

from clients.game_client import GameClient
from tests.helpers import wait_until

GAME = "happy_mochi"
ROUNDS = 10


class AnswerEater:
    """A TCP relay to ``target_port``: passes everything until ``eat`` is set, then drops
    what the server sends (the client's requests still get through)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.eat = False
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        for task in (
            asyncio.create_task(self._pipe(client_reader, server_writer, from_server=False)),
            asyncio.create_task(self._pipe(server_reader, client_writer, from_server=True)),
        ):
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, from_server: bool
    ) -> None:
        try:
            while chunk := await reader.read(65536):
                if from_server and self.eat:
                    continue
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()


async def test_a_join_whose_answer_was_lost_retried_gets_the_same_seat_and_nobody_elses(cluster):
    direct = cluster.replica_client(GAME, 0)
    port = int(cluster.replicas_addresses[GAME][0].rpartition(":")[2])
    eater = AnswerEater(port)
    await eater.start()
    try:
        for _ in range(ROUNDS):
            match = await direct.create(2)
            request_id = uuid.uuid4().hex
            async with grpc.aio.insecure_channel(f"127.0.0.1:{eater.port}") as channel:
                relayed = GameClient(channel, GAME)
                await relayed.match(match.match_id)  # connected, through the relay
                eater.eat = True
                join = common_pb2.JoinMatchRequest(
                    match_id=match.match_id, player_name="ann", request_id=request_id
                )
                lost = relayed.stub.JoinMatch(join, timeout=30)

                async def seated(match_id: str = match.match_id) -> bool:
                    return any(s.taken for s in (await direct.match(match_id)).seats)

                # Committed on the replica, and the answer eaten: the client gives up on it.
                await wait_until(seated, "the join to be committed", timeout_s=10)
                await asyncio.sleep(0.1)
                assert not lost.done(), "the answer got through the relay"
                lost.cancel()
            eater.eat = False
            retried = await direct.join(match.match_id, "ann", request_id=request_id)
            seats = (await direct.match(match.match_id)).seats
            assert [s.seat for s in seats if s.taken] == [retried.seat]  # no second seat
            other = await direct.join(match.match_id, "bob", request_id=uuid.uuid4().hex)
            assert other.match.status == common_pb2.IN_PROGRESS
            # Both seats are playable: each token opens its own seat's view.
            for joined in (retried, other):
                assert (await direct.view(match.match_id, joined.token)).seat == joined.seat
    finally:
        await eater.stop()
