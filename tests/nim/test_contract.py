"""Nim, added by its six files in tests/nim and nothing else, served by real service and
gateway processes (MOGAMES_EXTRA_GAMES=tests.nim): the generic contract (tests/game_contract.py)
and what every engine owes the platform (tests/test_engine_contract.py, tests/test_all_games.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from clients.game_client import GameClient
from services.catalog import GAME_PACKAGES, SHIPPED
from tests import game_contract, test_all_games, test_engine_contract


@pytest.fixture(scope="module")
def nim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with game_contract.served_game("tests.nim", tmp_path_factory.mktemp("nim")) as served:
        yield served


@pytest.fixture
async def client(nim: tuple[str, str]) -> AsyncIterator[GameClient]:
    async with game_contract.game_client(*nim) as served:
        yield served


def test_nim_is_no_shipped_game_and_is_served_only_while_registered(nim: tuple[str, str]) -> None:
    game, _ = nim
    assert game == "nim" and game not in SHIPPED and GAME_PACKAGES[game] == "tests.nim"


async def test_create_and_join(client: GameClient) -> None:
    await game_contract.check_create_and_join(client)


@pytest.mark.parametrize("players", [2, 4])
async def test_prompts_moves_watch_and_spectators(client: GameClient, players: int) -> None:
    await game_contract.check_moves_prompts_watch_and_spectators(client, players, seed=30 + players)


async def test_refusals(client: GameClient) -> None:
    await game_contract.check_refusals(client, seed=8)


async def test_timers(client: GameClient) -> None:
    await game_contract.check_timers(client, seed=9)


def test_what_every_engine_owes_the_platform(nim: tuple[str, str]) -> None:
    game, _ = nim
    for players in (2, 4):
        case = (game, players)
        test_engine_contract.test_opening_events_give_each_seat_its_set_up_and_tell_everyone_only_public_facts(
            case
        )
        test_engine_contract.test_random_play_timeout_moves_are_legal_and_every_apply_tells_someone(case)
        test_engine_contract.test_a_match_where_every_seat_times_out_ends(case)
        test_engine_contract.test_the_state_is_an_engine_state_that_its_codecs_give_back_along_random_play(
            case
        )
    test_all_games.test_random_matches_are_deterministic_and_contract_shaped(game)
    test_all_games.test_seed_is_never_shown(game)
