"""The table display: every face-up card, counts, the pool and rulings, within 80 columns."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from voicesnap.display import PlayerView, TableView, card_text, cells, render


def _view(**kw) -> TableView:
    players = (
        PlayerView("Alice", 20, 3, "QS", active=True, wins=1),
        PlayerView("Bob", 12, 1, "QH"),
        PlayerView("Cara", 0, 0, None, out=True),
        PlayerView("Dev", 5, 0, None),
    )
    base = dict(players=players, pool=7, pool_top="8D", rulings=("Bob snapped: won 4 cards", "tie: pool of 6"),
                title="Classic Snap, game 2 of best-of-3", clock=61.25, matches=("Alice", "Bob"))
    base.update(kw)
    return TableView(**base)


def test_every_seat_shows_its_counts_and_showing_card() -> None:
    lines = render(_view(), ascii_only=True)
    text = "\n".join(lines)
    alice = next(l for l in lines if "Alice" in l)
    assert alice.startswith(" >") and "20" in alice and "QS" in alice and "match" in alice
    bob = next(l for l in lines if "Bob" in l and "snapped" not in l)
    assert "12" in bob and "QH" in bob and not bob.startswith(" >")
    assert "out" in next(l for l in lines if "Cara" in l)
    assert "--" in next(l for l in lines if "Dev" in l)
    assert "pool: 7 cards, top 8D" in text
    assert "Bob snapped: won 4 cards" in text and "tie: pool of 6" in text
    assert "61.2" in lines[0] or "61.3" in lines[0]


def test_unicode_suits_by_default() -> None:
    text = "\n".join(render(_view()))
    assert "Q\u2660" in text and "8\u2666" in text


@pytest.mark.parametrize("width", [40, 60, 80])
def test_lines_fit_the_terminal_even_with_long_names(width: int) -> None:
    long = tuple(PlayerView("Maximilian-Alexander " * 3, 52, 52, "10H") for _ in range(6))
    view = _view(players=long, notice="input device lost: plug it back in; the game resumes " * 3,
                 rulings=("a very long ruling " * 10,) * 6)
    lines = render(view, width=width)
    assert all(len(l) <= width for l in lines), [l for l in lines if len(l) > width]
    assert len([l for l in lines if "Maximilian" in l]) == 6
    assert any(l.startswith("!!") for l in lines)
    assert sum(1 for l in lines if l.startswith("   - ")) == 4  # only the latest rulings


def test_columns_stay_in_line_with_names_in_any_script() -> None:
    """"李明" takes four columns and "Zoë" spelt with a combining accent three: padded by code points,
    their rows' counts stood two columns left or one right of the others'."""
    import unicodedata

    seats = (PlayerView("李明", 20, 3, "QS"), PlayerView(unicodedata.normalize("NFD", "Zoë"), 12, 1, "QH"),
             PlayerView("Alice", 5, 0, None), PlayerView("王小明王小明王小明", 7, 2, "8D"))
    lines = render(_view(players=seats, matches=()), width=60)
    rows = [l for l in lines if l.rstrip().endswith(("0", "1"))][:4]
    assert len(rows) == 4, lines
    down = {cells(row[: row.index(str(p.face_down), 3) + len(str(p.face_down))]) for row, p in zip(rows, seats)}
    assert len(down) == 1, rows  # every count ends in one column
    assert all(cells(l) <= 60 for l in lines)
    assert "\u2026" in rows[3] and cells(rows[3].split("  ")[0]) <= 3 + 14  # the long name cut at 14 columns


def test_card_text_accepts_engine_like_cards_and_words() -> None:
    @dataclass
    class Card:
        rank: int
        suit: str

    assert card_text(Card(12, "spades"), ascii_only=True) == "QS"
    assert card_text(Card(10, "hearts")) == "10\u2665"
    assert card_text("ten of clubs", ascii_only=True) == "10C"
    assert card_text("cat") == "cat"  # picture decks show the picture's name
    assert card_text(None) == "--"


def test_single_pile_snaps_title_shows_the_card_under_the_top_and_a_match() -> None:
    """One shared face-up pile: the title showed its top card only, with no "= match" when the card under
    it had the same face, though a match is what the players call on (a QA game)."""
    from voicesnap.rules import Flipped
    from voicesnap.table import view_of
    from voicesnap.variants import SinglePileSnap

    game = SinglePileSnap(["alice", "bob"], seed=3)
    seen = {True: 0, False: 0}
    for k in range(60):
        if game.over:
            break
        flipped = [e for e in game.flip(float(k)) if isinstance(e, Flipped)]
        centre = game.state.piles[0]
        title = view_of(game).title
        if len(centre) > 1:
            under = centre[-2].code
            assert f"top {centre[-1].code} on {under}" in title, title
            assert ("= match" in title) == flipped[-1].match, title  # as the engine judges it
            seen[flipped[-1].match] += 1
    assert seen[True] and seen[False]  # both cases shown on this deal


def test_a_long_notice_is_wrapped_whole_with_its_way_out() -> None:
    """A lost mic's notice was cut at the line's end, "... sends no sound at all (unplu…": its way out
    ("plug it back in and it resumes by itself") never reached the screen."""
    from voicesnap.live import LiveInput

    notice = (f"{LiveInput.LOST}: Bob's microphone (channel 1) sends no sound at all (unplugged, muted or switched "
              "off?): the game is paused; plug it back in and it resumes by itself")
    lines = render(_view(notice=notice), width=80)
    assert all(cells(line) <= 80 for line in lines)
    shown = [line for line in lines if line.startswith(("!! ", "   ")) and "pool:" not in line and "- " not in line]
    assert " ".join(line[3:] for line in shown[:3]).startswith(notice), lines
    assert lines[1].startswith("!! input device lost") and "\u2026" not in "".join(shown[:3]), lines
