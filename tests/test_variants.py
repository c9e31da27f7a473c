"""Each variant, selected by name, plays by its own rule."""

from __future__ import annotations

import pytest

from snaptable import NAMES, cards, kinds, play, rig
from voicesnap import variants
from voicesnap.cards import DeckError
from voicesnap.errors import UserError
from voicesnap.referee import Call
from voicesnap.rules import (
    CallIgnored, Eliminated, Flipped, Forfeit, Game, Options, PoolWon, RulesError, SnapWon, WrongCall,
)


def test_registry_lists_the_classic_game_and_seven_variants() -> None:
    assert variants.names() == [
        "classic", "picture", "speed", "double", "single-pile", "slapjack", "silent", "animal",
    ]
    for name in variants.names():
        cls = variants.get(name)
        assert issubclass(cls, Game) and cls.variant == name and variants.describe(name)


@pytest.mark.parametrize("spoken, name", [
    ("Speed Snap", "speed"), ("single pile", "single-pile"), ("SLAPJACK", "slapjack"), ("snap", "classic"),
])
def test_names_are_forgiving(spoken: str, name: str) -> None:
    assert variants.get(spoken).variant == name


def test_unknown_variant_names_the_choices_and_a_close_match() -> None:
    with pytest.raises(variants.UnknownVariant, match="Did you mean 'speed'.*classic, picture") as info:
        variants.get("sped")
    assert isinstance(info.value, UserError)


def test_settings_a_variant_does_not_take_are_refused() -> None:
    with pytest.raises(RulesError, match="takes no setting"):
        variants.create("speed", NAMES[:2], 1, deck="farm")


# --------------------------------------------------------------------------- picture


def test_picture_snap_matches_identical_pictures_only() -> None:
    game = rig(["@cow @pig", "@cow @hen", "@duck"], cls=variants.PictureSnap)
    out = play(game, 1.0, 2.0, Call("Cat", "snap", 2.3), ("advance", 3.0), 3.0, 4.0, 5.0,
               Call("Ann", "snap", 5.2))
    assert out[1].match and out[1].card.spoken == "Cow"
    assert out[2] == SnapWon(2.3, "Cat", "snap", (0, 1), (1, 1), 2, 2)
    assert isinstance(out[-1], WrongCall)  # pig, hen and duck: no match


def test_picture_snap_deals_the_chosen_theme_and_logs_it() -> None:
    game = variants.create("picture", NAMES[:3], 5, deck="fruit")
    faces = {c.face for d in game.down for c in d}
    assert "banana" in faces and len(faces) == 13 and game.total() == 52
    assert game.events[0].config == (("deck", "fruit"),)
    again = variants.from_started(game.events[0])
    assert again.state == game.state


def test_picture_snap_unknown_theme_is_a_clear_error() -> None:
    with pytest.raises(DeckError, match="no picture deck called 'space'"):
        variants.create("picture", NAMES[:2], 1, deck="space")


# --------------------------------------------------------------------------- speed


def test_speed_snap_everyone_flips_at_once() -> None:
    game = rig(["7H 2C", "7S 3C", "9D 4C"], cls=variants.SpeedSnap)
    out = game.flip(1.0)
    assert [e.player for e in out] == ["Ann", "Ben", "Cat"] and all(e.t == 1.0 for e in out)
    assert [e.match for e in out] == [True, True, False]
    out = game.flip(2.0)
    assert [e.card for e in out] == cards("2C 3C 4C") and not any(e.match for e in out)
    game.check()


def test_speed_snap_match_flags_describe_the_table_after_everyone_flipped() -> None:
    game = rig(["8H 5H", "7S 8S", "9D 6D"], cls=variants.SpeedSnap)
    game.flip(1.0)  # 8H 7S 9D
    out = game.flip(2.0)  # Ann's 5H, Ben's 8S covers the 7S, Cat's 6D: no match
    assert [e.match for e in out] == [False, False, False]
    out = play(game, Call("Ann", "snap", 2.3))
    assert isinstance(out[0], WrongCall)


# --------------------------------------------------------------------------- double


@pytest.mark.parametrize("winner, loser", [("Cat", "Ben"), ("Ann", "Ben"), ("Ben", "Ann")])
def test_double_snap_the_player_who_completed_the_match_gives_a_card(winner: str, loser: str) -> None:
    game = rig(["7H 2C", "7S 3C", "9D 4C"], cls=variants.DoubleSnap)
    out = play(game, 1.0, 2.0, Call(winner, "snap", 2.3))
    assert kinds(out)[-2:] == ["SnapWon", "Forfeit"]
    assert out[-1] == Forfeit(2.3, loser, winner, 1)
    seat = NAMES.index(winner)
    assert game.down[seat][-1] == cards("2C" if loser == "Ann" else "3C")[0]
    assert game.total() == 52


def test_double_snap_a_loser_who_went_out_gives_nothing_and_nobody_pays_instead() -> None:
    game = rig(["2C 7H", "9D 7S", "7D"], cls=variants.DoubleSnap, rest_to=2)
    # 2C 9D 7D, then Ann's 7H matches Cat's 7D and Ben's 7S (his last card) completes the match
    out = play(game, 1.0, 2.0, 3.0, 4.0, 5.0, Call("Ann", "snap", 5.3))
    assert out[5] == SnapWon(5.3, "Ann", "snap", (0, 1, 2), (2, 2, 1), 5, 5)
    assert out[6] == Eliminated(5.3, 1, "Ben")
    assert "Forfeit" not in kinds(out)  # Ben, the loser, is out; Cat does not pay for him


# --------------------------------------------------------------------------- single pile


def test_single_pile_snap_matches_the_card_just_below() -> None:
    game = rig(["7H 2C 5S", "7S 9C", "8D"], cls=variants.SinglePileSnap)
    out = play(game, 1.0, 2.0, Call("Cat", "snap", 2.3), ("advance", 3.0), 3.0)
    assert out[1].match and out[2] == SnapWon(2.3, "Cat", "snap", (0,), (2,), 2, 2)
    assert len(game.piles) == 1 and game.piles[0] == cards("8D")


def test_single_pile_snap_needs_adjacent_cards() -> None:
    game = rig(["7H 2C", "8S 9C", "7D"], cls=variants.SinglePileSnap)
    out = play(game, 1.0, 2.0, 3.0, Call("Ann", "snap", 3.3))  # 7H 8S 7D: not adjacent
    assert not out[2].match
    assert out[-1] == WrongCall(3.3, "Ann", "snap", 0, 1, 1, 3)  # no pile of her own: a stack card


def test_single_pile_snap_flipping_your_last_card_puts_you_out() -> None:
    game = rig(["7H", "8S 9C"], cls=variants.SinglePileSnap, rest_to=1)
    out = game.flip(1.0)
    assert kinds(out) == ["Flipped", "Eliminated", "GameOver"] and out[-1].winner == "Ben"


# --------------------------------------------------------------------------- slapjack


def test_slapjack_slap_on_a_jack_wins_the_jack_piles() -> None:
    game = rig(["JH 2C", "7S 3C", "9D 4C"], cls=variants.SlapjackSnap)
    out = play(game, 1.0, Call("Ben", "slap", 1.3), ("advance", 2.0), 2.0, 3.0, Call("Cat", "slap", 3.4))
    assert out[1] == SnapWon(1.3, "Ben", "slap", (0,), (1,), 1, 1)
    assert out[-1] == WrongCall(3.4, "Cat", "slap", 1, 0, 1, 3)


def test_slapjack_snap_still_works() -> None:
    game = rig(["7H", "7S", "9D"], cls=variants.SlapjackSnap)
    out = play(game, 1.0, 2.0, Call("Cat", "snap", 2.3))
    assert out[-1].kind == "snap" and out[-1].piles == (0, 1)


def test_slap_is_no_call_in_the_classic_game() -> None:
    out = play(rig(["JH", "7S"]), 1.0, Call("Ben", "slap", 1.3))
    assert out[-1] == CallIgnored(1.3, "Ben", "slap", "not a call in classic")


# --------------------------------------------------------------------------- silent


def test_silent_snap_a_slam_is_the_call_and_words_are_ignored() -> None:
    game = rig(["7H 8H", "7S 5S", "8D"], cls=variants.SilentSnap, pool="9C")
    out = play(game, 1.0, 2.0, Call("Ann", "snap", 2.2), Call("Cat", "slam", 2.4), 3.0,
               Call("Cat", "slam", 3.5), 4.0, Call("Ben", "slam", 4.4))
    rulings = [e for e in out if not isinstance(e, Flipped)]
    assert rulings[0] == CallIgnored(2.2, "Ann", "snap", "not a call in silent")
    assert rulings[1] == SnapWon(2.4, "Cat", "slam", (0, 1), (1, 1), 2, 2)
    assert rulings[2] == WrongCall(3.5, "Cat", "slam", 1, 0, 2, 3)  # 8D matched nothing: pool 9C 8D
    assert rulings[3] == PoolWon(4.4, "Ben", 2, 4)  # Ann's 8H matches the pool's top, 8D


# --------------------------------------------------------------------------- animal


def test_animal_snap_each_player_calls_with_their_own_noise() -> None:
    game = rig(["7H", "7S", "8D"], cls=variants.AnimalSnap)
    assert game.animals == {"Ann": "moo", "Ben": "woof", "Cat": "meow"}
    out = play(game, 1.0, 2.0, Call("Ann", "snap", 2.2), Call("Cat", "woof", 2.25), Call("Ben", "woof", 2.3))
    assert out[2] == CallIgnored(2.2, "Ann", "snap", "not a call in animal")
    assert out[3] == WrongCall(2.25, "Cat", "woof", 0, 1, 1, 2)  # Ben's noise, not Cat's
    assert out[4] == SnapWon(2.3, "Ben", "snap", (0, 1), (1, 1), 2, 2)


def test_every_wrong_call_the_referee_rules_says_why_in_each_variant() -> None:
    """A wrong call's event carries the word said ("moo", "snap pool"), and the announcer looked its
    reason up by rule kind: Animal Snap's noises and every "snap pool" were announced with no why."""
    from voicesnap.table import describe, ruling_line

    def said(game: Game, out: list) -> list[str]:
        """The first sentence of each wrong call's ruling, as said (and printed), and as the display lists it."""
        wrong = [e for e in out if isinstance(e, WrongCall)]
        assert wrong, out
        lines = [describe(e, "names", game.state, game.players, game)[0].split(".")[0] for e in wrong]
        assert [(ruling_line(e, game) or "").split(".")[0] for e in wrong] == lines
        return lines

    animal = rig(["7H 2C", "8S 3C", "9D 4C"], cls=variants.AnimalSnap)
    assert animal.animals == {"Ann": "moo", "Ben": "woof", "Cat": "meow"}
    # Ann's own noise with no match; Cat says Ben's noise; Ben claims a pool when none matches it
    out = play(animal, 1.0, Call("Ann", "moo", 1.3), ("advance", 2.0), 2.0, Call("Cat", "woof", 2.3),
               ("advance", 3.0), 3.0, Call("Ben", "snap pool", 3.3))
    assert [e.kind for e in out if isinstance(e, WrongCall)] == ["moo", "woof", "snap pool"]  # the words said
    # (whose noise Cat said, by name: "not their call" alone left a player by ear to guess whose it was)
    assert said(animal, out) == ["Wrong call by Ann: no match", "Wrong call by Cat: woof is Ben's call",
                                 "Wrong call by Ben: no pool match"]
    classic = rig(["7H 2C", "7S 3C", "9D 4C"], pool="5C")
    # a pool claim with no pool match showing, and a snap with no match
    out = play(classic, 1.0, 2.0, 3.0, Call("Cat", "snap pool", 3.3), ("advance", 4.0), 4.0, Call("Ann", "snap", 4.2))
    assert said(classic, out) == ["Wrong call by Cat: no pool match", "Wrong call by Ann: no match"]
    silent = rig(["7H 2C", "8S 3C", "9D 4C"], cls=variants.SilentSnap)
    out = play(silent, 1.0, 2.0, Call("Ben", "slam", 2.3))
    assert said(silent, out) == ["Wrong call by Ben: nothing to win"]
    slapjack = rig(["7H 2C", "8S 3C", "9D 4C"], cls=variants.SlapjackSnap)
    out = play(slapjack, 1.0, Call("Cat", "slap", 1.3))
    assert said(slapjack, out) == ["Wrong call by Cat: no Jack"]


def test_animal_snap_chosen_noises_survive_the_log() -> None:
    game = variants.create("animal", NAMES[:3], 4, animals={"Ben": "baa"})
    assert game.animals == {"Ann": "moo", "Ben": "baa", "Cat": "woof"}
    assert variants.from_started(game.events[0]).animals == game.animals


@pytest.mark.parametrize("animals, message", [
    ({"Ann": "moo", "Ben": "moo"}, "share"), ({"Zed": "moo"}, "not playing"), ({"Ann": "snap"}, "cannot be"),
])
def test_animal_snap_bad_noises_are_refused(animals: dict, message: str) -> None:
    with pytest.raises(RulesError, match=message):
        variants.create("animal", NAMES[:3], 4, animals=animals)


@pytest.mark.parametrize("name, seat, words", [
    ("classic", 0, {"snap": "snap", "pool": "snap pool"}),
    ("picture", 0, {"snap": "snap", "pool": "snap pool"}),
    ("slapjack", 2, {"snap": "snap", "pool": "snap pool", "slap": "slap"}),
    ("silent", 1, {"snap": "slam", "pool": "slam"}),
    ("animal", 0, {"snap": "moo", "pool": "snap pool"}),
    ("animal", 3, {"snap": "baa", "pool": "snap pool"}),
])
def test_call_words_are_what_the_variant_hears(name: str, seat: int, words: dict) -> None:
    game = variants.create(name, NAMES[:4], seed=1)
    assert game.call_words(seat) == words
    for kind, word in words.items():  # and the variant rules each word as that kind
        assert game.call_kind(seat, word) in (kind, "slam")


def test_animal_call_words_follow_chosen_noises() -> None:
    game = variants.create("animal", NAMES[:2], seed=1, animals={"Ben": "hoot"})
    assert game.call_words(1)["snap"] == "hoot" and game.call_words(0)["snap"] == "moo"


def test_single_pile_public_view_is_one_central_pile() -> None:
    game = variants.create("single-pile", NAMES[:3], seed=1)
    assert {game.pile_index(s) for s in range(3)} == {0}
    game.flip(1.0)
    assert len(game.showing()) == 1 and game.showing()[0] == game.state.piles[0][-1]


def test_speed_snap_refuses_a_pool_claim_for_the_flipper_alone() -> None:
    """Everyone is the flipper in Speed Snap: `simulate --variant speed --pool-claim flipper` played as
    "anyone" while its report said "pool claimed by flipper"."""
    with pytest.raises(RulesError, match="Speed Snap has no single flipper"):
        variants.create("speed", NAMES[:3], 1, Options(pool_claim="flipper"))
    assert variants.create("single-pile", NAMES[:3], 1, Options(pool_claim="flipper")).options.pool_claim == "flipper"


def test_each_variant_has_a_title_in_words_the_one_its_rules_begin_with() -> None:
    """play's first line printed the id ("single-pile"), which a screen reader spelt out: the title is
    the name the variant's own rules are said under."""
    for name in variants.names():
        game = variants.create(name, ("Ann", "Ben"), 1)
        title = variants.get(name).title
        assert title and "-" not in title and title[0].isupper(), name
        assert game.rule_words().startswith(title) or (name == "classic" and not game.rule_words()), name
