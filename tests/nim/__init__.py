"""Nim, the toy game the tests add to the platform the way docs/adding-a-game.md says: its
contract (nim.proto), its engine (rules.py), its positions and tests, served from here with
``MOGAMES_EXTRA_GAMES=tests.nim`` (tests/game_contract.py)."""
