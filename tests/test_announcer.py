"""The announcer: wording, the queue's interrupt rules, a seeded game's timeline, text mode,
earcons, and going on in text without speech or a speaker."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from voicesnap.announcer import (
    EARCONS, Announcement, Announcer, Priority, Settings, SpeechQueue, Verbosity, describe, earcon,
    open_announcer, rehearse, startup_phrases, status_words,
)
from voicesnap.cards import Card, Rank, Suit
from voicesnap.playback import VirtualPlayback
from voicesnap.rules import (
    Dealt, Eliminated, Flipped, GameOver, Game, PoolWon, SnapWon, TieToPool, WrongCall,
)
from voicesnap.session import GameScored, SessionOver
from voicesnap.speech import NoSpeechEngine, SpeechCache, VoiceSettings
from voicesnap.variants import SpeedSnap
from voicesnap.vocabulary import CALLS, COMMAND_PREFIX

EIGHT_H = Card(rank=Rank.EIGHT, suit=Suit.HEARTS)


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("VOICESNAP_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


@pytest.fixture
def cache(data_dir):
    try:
        c = SpeechCache.in_data_dir(data_dir, VoiceSettings(), rate=16000)
        c.get("Eight")
    except NoSpeechEngine:
        pytest.skip("espeak-ng is not installed")
    return c


# --- wording -------------------------------------------------------------------


def test_flip_wording_by_verbosity():
    ev = Flipped(1.0, 0, "alice", EIGHT_H, 3, False, False)
    assert describe(ev, Verbosity.RANKS)[:2] == ("Eight", Priority.FLIP)
    assert describe(ev, Verbosity.NAMES)[0] == "alice, Eight of Hearts"
    assert describe(ev, Verbosity.ALL)[0] == "alice, Eight of Hearts"


def test_rulings_say_who_how_many_and_the_pool_top_card():
    game = Game(["alice", "bob", "cara"], seed=1)
    state = game.state
    assert describe(SnapWon(2.0, "bob", "snap", (0, 1), (3, 2), 5), Verbosity.RANKS) == (
        "bob wins 5 cards.", Priority.RULING, "snap_won")
    text, prio, ear = describe(TieToPool(2.0, ("alice", "bob"), "snap", (0, 1), (2, 2), 4), Verbosity.RANKS,
                               state._replace(pool=(EIGHT_H,)) if hasattr(state, "_replace") else None)
    assert "Tie between alice and bob" in text and "4 cards" in text and prio is Priority.RULING
    assert ear == "pool_formed"
    text, _, ear = describe(WrongCall(3.0, "cara", "snap", 1, 0, 7), Verbosity.RANKS)
    assert text.startswith("Wrong call by cara: no match. 1 card to the pool") and ear == "wrong_call"
    # why, by the kind of call the word is: without the game, the classic words only (the variants'
    # words, as the referee rules them: tests/test_variants.py)
    assert describe(WrongCall(3.0, "cara", "snap pool", 1, 0, 7), Verbosity.RANKS)[0].startswith(
        "Wrong call by cara: no pool match.")
    assert describe(PoolWon(4.0, "alice", 9, 12), Verbosity.RANKS)[0] == "alice wins the pool, 9 cards."
    assert describe(Eliminated(5.0, 2, "cara"), Verbosity.RANKS) == ("cara is out.", Priority.RULING, "elimination")
    assert describe(GameOver(6.0, "alice", "last player", (52, 0, 0)), Verbosity.RANKS)[0] == "Game over. alice wins."


def test_a_game_the_guard_ended_says_why_in_words() -> None:
    """The bare reason was read aloud: "Game over. Bob wins (repeat).", which a player could not follow."""
    names = ("alice", "bob", "cara")
    said = describe(GameOver(9.0, "bob", "repeat", (17, 18, 17)), Verbosity.RANKS, players=names)[0]
    assert said == "Game over: the same cards came round again. bob wins with the most cards, 18."
    said = describe(GameOver(9.0, "cara", "flip cap", (26, 0, 26)), Verbosity.RANKS, players=names)[0]
    assert said == "Game over: the flip limit is reached. cara wins on the tie-break."
    assert describe(GameOver(9.0, "cara", "flip cap", (26, 0, 26)), Verbosity.RANKS)[0] == (
        "Game over: the flip limit is reached. cara wins.")  # no seats given: no count to say
    assert describe(Dealt(0.0, 0, (26, 26), 1), Verbosity.RANKS, players=("alice", "bob"))[0] == (
        "alice deals. bob goes first.")
    assert describe(GameScored(6.0, 1, "alice", (1, 0), False), Verbosity.RANKS, players=("alice", "bob"))[0] == (
        "Game 1 to alice. Scores: alice 1, bob 0.")
    assert "alice wins the session" in describe(SessionOver(9.0, "alice", (2, 0), 2, False), Verbosity.RANKS,
                                                players=("alice", "bob"))[0]


def test_tie_names_the_pools_top_card_from_the_table():
    game = Game(["alice", "bob"], seed=1)
    state = game.state
    from dataclasses import replace

    state = replace(state, pool=(Card(rank=Rank.TWO, suit=Suit.CLUBS), EIGHT_H))
    text = describe(TieToPool(2.0, ("alice", "bob"), "snap", (0, 1), (2, 2), 4), Verbosity.RANKS, state)[0]
    assert text.endswith("the pool has 4 cards, top card Eight of Hearts.")


def test_announcer_never_says_a_call_or_the_command_prefix():
    # Its own voice must not be heard as a call or a command (see commands.py).
    game = Game(["alice", "bob", "cara"], seed=5)
    ann = Announcer(None, None, Settings(verbosity=Verbosity.ALL))
    rehearse(game, ann, VirtualPlayback(16000), seed=5, max_flips=200)
    words = {w.strip(".,!?;:'").lower() for a in ann.log for w in a.text.split()}
    assert not words & {c for c in CALLS if " " not in c}  # "pool" alone is fine; "snap pool" is not
    assert not any(c in a.text.lower() for a in ann.log for c in CALLS)
    assert COMMAND_PREFIX not in words


# --- the queue -----------------------------------------------------------------


def _a(i: int, prio: Priority, flip: int) -> Announcement:
    return Announcement(i, 0.0, "x", prio, f"item {i}", flip)


def test_a_flip_cancels_older_flips_and_info_but_never_rulings():
    q = SpeechQueue()
    assert q.submit(_a(1, Priority.FLIP, 1)) == []
    assert q.submit(_a(2, Priority.INFO, 1)) == []
    assert q.submit(_a(3, Priority.RULING, 1)) == [2]  # a ruling supersedes info
    assert q.submit(_a(4, Priority.INFO, 1)) == []
    assert sorted(q.submit(_a(5, Priority.FLIP, 2))) == [1, 4]
    assert set(q.active) == {3, 5} and q.stale() == 0


def test_flips_of_the_same_serial_queue_in_turn():
    q = SpeechQueue()  # Speed Snap: everyone flips at once, each card is said
    for i in range(1, 4):
        assert q.submit(_a(i, Priority.FLIP, 7)) == []
    assert sorted(q.submit(_a(9, Priority.FLIP, 8))) == [1, 2, 3]


def test_rulings_are_never_cancelled():
    q = SpeechQueue()
    for i in range(1, 6):
        q.submit(_a(i, Priority.RULING, i))
    for i in range(6, 20):
        assert not set(q.submit(_a(i, Priority.FLIP, i))) & {1, 2, 3, 4, 5}


def test_an_answer_cuts_the_answers_before_it_and_nothing_else():
    """A player who asks for the score in the middle of the help (16 s of it) wants the score now."""
    q = SpeechQueue()
    help_ = Announcement(1, 0.0, "reply", Priority.RULING, "help", 1, answer=True)
    assert q.submit(help_) == []
    assert q.submit(_a(2, Priority.RULING, 1)) == []  # a ruling never cuts an answer
    assert q.submit(_a(3, Priority.FLIP, 2)) == []  # nor does the next card
    assert q.submit(Announcement(4, 0.0, "reply", Priority.RULING, "score", 2, answer=True)) == [1]
    assert set(q.active) == {2, 3, 4}


def _saying_help(cache):
    """A real announcer behind the table's speaker, 1 s into a long help answer: (announcer, playback,
    speaker, its playback events so far)."""
    from voicesnap.announcer import TableSpeaker
    from voicesnap.table import PRIORITY_RULING, Say

    pb = VirtualPlayback(16000, block=128)
    ann = Announcer(cache, pb, Settings(text=False))
    speaker = TableSpeaker(ann)
    helps = Say("To call, say snap. To ask for the score, say dealer score. " * 3, PRIORITY_RULING, answer=True)
    speaker.say(helps.text, helps.priority, helps)
    pb.advance_to(1.0)
    return ann, pb, speaker, speaker.poll()


def test_a_spoken_answer_is_cut_by_the_next_one(cache):
    """Through the real speaker path: the table's Say of an answer reaches the queue as an answer,
    the help playing is cut at once, and the score is heard whole."""
    from voicesnap.playback import SpeechEnded
    from voicesnap.table import PRIORITY_RULING, Say

    ann, pb, speaker, events = _saying_help(cache)
    score = Say("Alice 2 games, Bob 1.", PRIORITY_RULING, answer=True)
    speaker.say(score.text, score.priority, score)
    ruling = Say("Bob wins 4 cards.", PRIORITY_RULING)  # not an answer: never cut by one
    speaker.say(ruling.text, ruling.priority, None)
    pb.advance_to(8.0)
    events += speaker.poll()
    ended = {e.id: e for e in events if isinstance(e, SpeechEnded)}
    help_id, score_id, ruling_id = (a.id for a in ann.log[-3:])
    assert not ended[help_id].completed and ended[help_id].t < 1.1, ended  # cut about when the score was asked
    assert ended[score_id].completed and ended[ruling_id].completed, ended


# --- a seeded game's timeline ----------------------------------------------------


def _timeline(cache, game, verbosity=Verbosity.NAMES, pace=1.0, seed=11, flips=60):
    out = io.StringIO()
    pb = VirtualPlayback(16000, block=128, record=True)
    ann = Announcer(cache, pb, Settings(verbosity=verbosity, text=True), out=out)
    ann.prepare()
    stale_seen = []
    log = rehearse(game, ann, pb, seed=seed, pace=pace, max_flips=flips,
                   on_step=lambda now: stale_seen.append(ann.queue.stale()))
    return ann, pb, log, out.getvalue().splitlines(), stale_seen


def test_seeded_game_timeline(cache):
    game = Game(["alice", "bob", "cara"], seed=21)
    ann, pb, log, lines, stale_seen = _timeline(cache, game)
    rulings = [a for a in ann.log if a.priority is Priority.RULING]
    flips = [a for a in ann.log if a.kind == "flipped"]
    assert len(flips) == sum(isinstance(e, Flipped) for e in log) == 60
    assert any(a.kind == "snap-won" for a in rulings) and any(a.kind == "wrong-call" for a in rulings)
    # every ruling was played, in order, each after the event it reports
    starts = [ann.started[a.id] for a in rulings]
    assert starts == sorted(starts) and all(ann.started[a.id] >= a.t for a in rulings)
    # pre-rendered flips start within 20 ms of the flip (one 8 ms output block here)
    delays = [ann.started[a.id] - a.t for a in flips]
    assert max(delays) <= 0.020
    # nothing stale ever waited, and no flip started after a newer flip was made
    assert max(stale_seen) == 0
    flip_times = sorted(a.t for a in flips)
    for a in flips:
        newer = [t for t in flip_times if t > a.t]
        assert not newer or ann.started[a.id] < newer[0]
    # text: one plain line per announcement, same words
    assert lines == [a.text for a in ann.log]
    # what was "heard" at a flip's start is that flip's audio (name clip first)
    rec = pb.recording()
    first = flips[0]
    at = round(ann.started[first.id] * 16000)
    name = cache.get(first.text.split(",")[0]).samples
    assert np.array_equal(rec[at : at + len(name)], name)


def test_seeded_game_is_announced_the_same_way_twice(cache):
    a1 = _timeline(cache, Game(["alice", "bob"], seed=4), flips=30)[0]
    a2 = _timeline(cache, Game(["alice", "bob"], seed=4), flips=30)[0]
    assert [(x.text, a1.started.get(x.id)) for x in a1.log] == [(x.text, a2.started.get(x.id)) for x in a2.log]


def test_fast_speed_snap_leaves_no_stale_backlog(cache):
    game = SpeedSnap(["alice", "bob", "cara", "dev"], seed=8)
    ann, pb, log, lines, stale_seen = _timeline(cache, game, verbosity=Verbosity.NAMES, pace=0.6, flips=40)
    assert max(stale_seen) == 0
    assert pb.dropped + pb.cut == 0  # far too fast a pace to say every card: the rounds wait for them
    assert all(a.id in ann.started for a in ann.log if a.priority is Priority.RULING)


def test_speed_snap_says_every_players_card_and_leaves_time_to_call_the_last(cache):
    """Everyone's cards are turned at once, each with its own flip number: by those numbers each card
    cut the one before it, and only the last player's card was ever heard (a QA game by ear). Said in
    turn, 4 players' cards (about 1.2 s each) outlast a pace of 2 s: the next round cut the rest (9 cards
    in 93 never started at a pace of 3 s). The next round waits for the round to be said, and a moment
    more to call a match its last card made."""
    from voicesnap.table import Output

    game = SpeedSnap(["alice", "bob", "cara", "dev"], seed=8)
    ann, pb, log, lines, stale_seen = _timeline(cache, game, verbosity=Verbosity.NAMES, pace=2.0, flips=12)
    flips = [a for a in ann.log if a.kind == "flipped"]
    assert len(flips) == sum(isinstance(e, Flipped) for e in log) >= 12 * 3
    assert {a.text.split(",")[0] for a in flips} == {"alice", "bob", "cara", "dev"}
    assert all(a.id in ann.started for a in flips), [a.text for a in flips if a.id not in ann.started]
    assert pb.cut == 0 and pb.dropped == 0 and max(stale_seen) == 0
    rounds = sorted({a.t for a in flips})
    for before, after in zip(rounds, rounds[1:]):
        said = max(ann.spoken[a.id][1] for a in flips if a.t == before)
        assert after >= said + Output.ROUND_GAP - 1e-9


def test_a_sessions_next_game_cuts_the_last_games_cards_though_it_counts_flips_from_1_again() -> None:
    """The serial was the game's own flip number: in a session's second game the cards (flips 1, 2, ...)
    were older than the first game's last and cut nothing, so at a fast pace they queued up stale."""
    ann = Announcer(None, None)
    serials = []
    for t, flip in ((1.0, 40), (2.0, 41), (10.0, 1), (11.0, 2), (11.0, 3)):  # game 2 from t=10; Speed at 11
        ann.flipped(Flipped(t, 0, "a", EIGHT_H, flip, False, False))
        serials.append(ann.flip)
    assert serials[0] < serials[1] < serials[2] < serials[3] == serials[4]


def test_text_lines_carry_no_decoration():
    out = io.StringIO()
    ann = Announcer(None, None, Settings(verbosity=Verbosity.ALL, text=True), out=out)
    rehearse(Game(["alice", "bob", "cara"], seed=2), ann, VirtualPlayback(16000), seed=2, max_flips=80)
    lines = out.getvalue().splitlines()
    assert len(lines) == len(ann.log) > 80
    for line in lines:
        assert line == line.strip() and line
        assert not re.search(r"[\[\]{}<>|*#_~`=\\]|\x1b|->|\d+\.\d+ ?s\b", line), line
        assert line.isascii()


# --- earcons ---------------------------------------------------------------------


def _pitch(x: np.ndarray, rate: int) -> float:
    spec = np.abs(np.fft.rfft(x.astype(np.float64)))
    return float(np.argmax(spec) * rate / len(x))


def test_earcons_are_short_and_distinct():
    rate = 16000
    sounds = {name: earcon(name, rate) for name in EARCONS}
    assert set(sounds) == {"snap_won", "pool_formed", "wrong_call", "elimination", "your_turn"}
    signatures = set()
    for name, x in sounds.items():
        assert x.dtype == np.int16 and 0.05 < len(x) / rate < 0.5, name
        assert np.abs(x.astype(int)).max() < 32767 * 0.5  # quieter than speech, no clipping
        notes = EARCONS[name]
        signatures.add((len(notes), round(_pitch(x, rate), -1), notes[0][0] < notes[-1][0]))
    assert len(signatures) == len(sounds)


def test_ruling_audio_starts_with_its_earcon(cache):
    pb = VirtualPlayback(16000, record=True)
    ann = Announcer(cache, pb, Settings())
    ann.handle([SnapWon(0.0, "bob", "snap", (0,), (3,), 3)])
    pb.advance_to(3.0)
    rec = pb.recording()
    tone = earcon("snap_won", 16000)
    assert np.array_equal(rec[: len(tone)], tone)


# --- commands the announcer answers ------------------------------------------------


def test_status_words_and_speech_changes(cache):
    """The status answer's words, and "slower"/"louder" as the game makes them (TableSpeaker.change)."""
    game = Game(["alice", "bob"], seed=3)
    game.flip(1.0)
    text = status_words(game.state)
    assert text.startswith("alice 26 cards, nothing showing. bob 26 cards, showing ") and text.endswith("Pool empty.")
    ann = Announcer(cache, VirtualPlayback(16000), Settings(text=True), out=io.StringIO())
    before = cache.settings
    assert ann.change(rate=-25) == "Speaking slower: 175 words a minute."
    assert cache.settings.rate == before.rate - 25 and cache.cached("Eight of Hearts")
    assert ann.change(volume=0.2) == "Louder: volume 120 percent."
    assert cache.settings.volume == pytest.approx(before.volume + 0.2)
    for _ in range(9):  # to the top of the range, and said so
        ann.change(volume=0.2)
    assert ann.change(volume=0.2) == "The announcer is as loud as it goes: volume 200 percent."


def test_startup_set_covers_every_flip_phrase():
    ranks = startup_phrases(["alice"], Verbosity.RANKS)
    assert {r.spoken for r in Rank} <= set(ranks) and "alice" not in ranks
    names = startup_phrases(["alice", "bob"], Verbosity.NAMES)
    assert "Eight of Hearts" in names and {"alice", "bob"} <= set(names)


# --- no speech, no speaker: say why once, go on in text ------------------------------


def test_no_speaker_says_why_once_and_the_game_goes_on_in_text(data_dir):
    notices: list[str] = []
    out = io.StringIO()
    ann = open_announcer(data_dir, VoiceSettings(), Settings(verbosity=Verbosity.RANKS), out=out,
                         output_device="no such speaker 1234", notice=notices.append)
    if ann.speech is None and notices and "espeak-ng" in notices[0]:
        pytest.skip("espeak-ng is not installed")
    assert len(notices) == 1 and "no audio output" in notices[0] and "text" in notices[0]
    game = Game(["alice", "bob"], seed=9)
    rehearse(game, ann, VirtualPlayback(16000), seed=9, max_flips=20)
    assert len(notices) == 1
    assert len(out.getvalue().splitlines()) == len(ann.log) >= 22


def test_unknown_voice_says_why_once_with_close_matches(data_dir):
    notices: list[str] = []
    out = io.StringIO()
    ann = open_announcer(data_dir, VoiceSettings(voice="gmw/en-uss"), Settings(), out=out, notice=notices.append)
    if notices and "not installed" in notices[0]:
        pytest.skip("espeak-ng is not installed")
    assert len(notices) == 1 and "gmw/en-US" in notices[0] and ann.speech is None
    game = Game(["alice", "bob"], seed=9)
    ann.handle(game.events, game.state)
    ann.handle(game.flip(1.0), game.state)
    assert out.getvalue().splitlines()[-1].startswith("bob, ")


def test_speech_failing_mid_game_switches_to_text_once(cache, monkeypatch):
    from voicesnap import speech

    notices: list[str] = []
    out = io.StringIO()
    ann = Announcer(cache, VirtualPlayback(16000), Settings(), out=out, notice=notices.append)
    monkeypatch.setattr(speech, "_ENGINE", None)
    monkeypatch.setattr(speech, "_Binding", lambda: (_ for _ in ()).throw(OSError("gone")))
    monkeypatch.setenv("PATH", "")
    game = Game(["alice", "bob"], seed=3)
    ann.handle(game.events, game.state)  # "New game." is not cached: rendering fails
    ann.handle(game.flip(1.0), game.state)
    assert len(notices) == 1 and "espeak-ng" in notices[0]
    assert out.getvalue().splitlines()[-1].startswith("bob, ")


# --- the table's interface (voicesnap.table Output / cli play) ---------------------


def test_table_speaker_speaks_the_tables_words_and_flips_from_clips(cache):
    from voicesnap.announcer import TableSpeaker

    pb = VirtualPlayback(16000, record=True)
    ann = Announcer(cache, pb, Settings())
    speaker = TableSpeaker(ann)
    game = Game(["alice", "bob"], seed=3)
    ev = game.flip(0.0)[0]
    speaker.say(f"{ev.player}: {ev.card.spoken}", 1, ev)
    speaker.say("bob snapped and won 4 cards", 3, SnapWon(0.5, "bob", "snap", (0,), (4,), 4))
    pb.advance_to(6.0)
    speaker.poll()
    assert [a.priority for a in ann.log] == [Priority.FLIP, Priority.RULING]
    assert ann.log[1].earcon == "snap_won" and len(ann.started) == 2
    name = cache.get(ev.player).samples
    assert np.array_equal(pb.recording()[: len(name)], name)
    speaker.setting("louder")
    assert cache.settings.volume == pytest.approx(1.2)


def test_table_speaker_reports_once_that_speech_failed_mid_game(cache, monkeypatch):
    """Speech that fails during a game is reported to the table (which stops waiting for
    announcements), with the reason the announcer gave."""
    from voicesnap import speech
    from voicesnap.announcer import TableSpeaker
    from voicesnap.playback import SpeechStopped

    pb = VirtualPlayback(16000)
    reasons: list[str] = []
    ann = Announcer(cache, pb, Settings(), out=io.StringIO(), notice=reasons.append)
    speaker = TableSpeaker(ann, reasons)
    game = Game(["alice", "bob"], seed=3)
    ev = game.flip(0.0)[0]
    speaker.say(f"{ev.player}: {ev.card.spoken}", 1, ev)
    pb.advance_to(2.0)
    assert not any(isinstance(e, SpeechStopped) for e in speaker.poll())
    monkeypatch.setattr(speech, "_ENGINE", None)
    monkeypatch.setattr(speech, "_Binding", lambda: (_ for _ in ()).throw(OSError("gone")))
    monkeypatch.setenv("PATH", "")
    speaker.say("a sentence never rendered before", 2, None)  # rendering fails: speech goes off
    stopped = [e for e in speaker.poll() if isinstance(e, SpeechStopped)]
    assert len(stopped) == 1 and "espeak-ng" in stopped[0].reason
    assert not speaker.poll()  # said once


def test_for_table_without_a_speaker_raises_a_user_error_with_the_reason(data_dir):
    from voicesnap.announcer import for_table
    from voicesnap.errors import UserError

    with pytest.raises(UserError) as err:
        for_table(device="no such speaker 1234", data_dir=data_dir)
    assert "no audio output" in str(err.value) or "espeak-ng" in str(err.value)


def test_status_in_single_pile_snap_names_the_centre_pile_not_a_players_pile():
    from voicesnap.variants import SinglePileSnap

    game = SinglePileSnap(["alice", "bob", "cara"], seed=5)
    for t in (1.0, 2.0, 3.0):
        game.flip(t)
    state = game.state
    centre = state.piles[0]
    text = status_words(state)
    # nobody "shows" the centre card, and each count is what that player holds
    assert "showing" not in text
    for seat, name in enumerate(state.players):
        assert f"{name} {state.held(seat)} cards." in text
    assert f"Centre pile 3 cards, top card {centre[-1].spoken}." in text
    assert text.endswith("Pool empty.")


def test_the_microphone_back_cuts_the_still_playing_lost_notice(cache):
    """The "lost" notice is about 9 s of speech. A microphone back after 2 s is said at once, cutting it,
    not after it (the game waits for neither, but a player who plays by ear heard "paused" for 7 s more)."""
    from voicesnap.announcer import TableSpeaker
    from voicesnap.playback import SpeechEnded, SpeechStarted
    from voicesnap.live import LiveInput
    from voicesnap.table import Output, TableLoop
    from voicesnap.referee import Referee

    class _Log:
        def write(self, *records):
            pass

    pb = VirtualPlayback(16000)
    ann = Announcer(cache, pb, Settings(), out=io.StringIO())
    output = Output(_Log(), say=TableSpeaker(ann).say, lines=lambda s: None)
    game = Game(["alice", "bob"], seed=3)
    loop = TableLoop(Referee(game, 0.5), game.players, pace=1.0, make_call=lambda *a: None,
                     describe=lambda e: None, is_over=lambda g: False)
    lost = f"{LiveInput.LOST}: {LiveInput.SILENT_TEXT.format(meanwhile='the game is paused')}"
    output(loop.hold(lost))
    pb.advance_to(2.0)
    output(loop.release(2.0, f"{LiveInput.BACK}: sound again, resuming"))
    pb.advance_to(12.0)
    events = ann.poll()
    started = {e.id: e.t for e in events if isinstance(e, SpeechStarted)}
    ended = {e.id: e for e in events if isinstance(e, SpeechEnded)}
    said_lost, said_back = [a for a in ann.log if a.text.startswith((LiveInput.LOST, LiveInput.BACK))]
    assert said_lost.text == lost and said_back.text.startswith(LiveInput.BACK)
    assert len(cache.get(lost).samples) > 16000 * 5  # long enough that waiting behind it would show
    assert not ended[said_lost.id].completed and ended[said_lost.id].t == pytest.approx(2.0, abs=0.1)
    assert started[said_back.id] == pytest.approx(2.0, abs=0.1)
    assert ended[said_back.id].completed


def test_the_end_command_s_farewell_cuts_the_help_still_being_said(cache):
    """A player by ear said "dealer end game" during the help (about 16 s) and heard all of it before
    the game said it had ended. play's farewell is now the end command's answer, and cuts it; a
    session won still waits for what is being said (a ruling is never cut)."""
    from voicesnap.cli.play import _say_farewell
    from voicesnap.playback import SpeechEnded, SpeechStarted
    from voicesnap.table import SessionResult

    for reason, cut in (("ended", True), ("over", False)):
        ann, pb, speaker, events = _saying_help(cache)
        _say_farewell(speaker.say, SessionResult(reason, "Alice" if reason == "over" else None, 1, []))
        pb.advance_to(30.0)
        events += speaker.poll()
        help_id, bye_id = (a.id for a in ann.log[-2:])
        ended = {e.id: e for e in events if isinstance(e, SpeechEnded)}
        started = {e.id: e.t for e in events if isinstance(e, SpeechStarted)}
        assert ended[help_id].completed is not cut, (reason, ended)
        assert (started[bye_id] < 1.1) is cut, (reason, started)
        assert ended[bye_id].completed


def test_a_session_won_is_not_said_twice() -> None:
    """A best of 3's end was said as "Alice wins the session after 2 games. Scores: Alice 2, Bob 0." and then
    again, 4 s later, "Alice wins the session." (a QA game's log). The farewell is said only where the
    session's end was not (a session ended some other way, and the stopped ones)."""
    from voicesnap.cli.play import _say_farewell
    from voicesnap.session import SessionOver
    from voicesnap.table import SessionResult

    over = SessionOver(9.0, "Alice", (2, 0), 2, False)
    said: list[str] = []
    _say_farewell(lambda text, priority, ev: said.append(text),
                  SessionResult("over", "Alice", 2, [("Alice wins the session after 2 games. Scores: Alice 2, Bob 0.",
                                                      over)]))
    assert said == []
    _say_farewell(lambda text, priority, ev: said.append(text), SessionResult("over", "Alice", 2, []))
    _say_farewell(lambda text, priority, ev: said.append(text), SessionResult("interrupted", None, 1, []))
    assert said[0] == "Alice wins the session." and said[1].startswith("Game stopped."), said
    # a game kept with --record resumes only with that folder: said, as it is printed
    _say_farewell(lambda text, priority, ev: said.append(text), SessionResult("interrupted", None, 1, []), recorded=True)
    assert said[2] == ("Game stopped. To continue it, run voicesnap play with the resume option and the same record "
                       "folder."), said


def test_hush_drops_waiting_rulings_so_the_stop_is_said_at_once(cache):
    """Rulings are never cancelled in play; after a flood of calls, a game stopped by Ctrl-C went on
    saying them for 20 s, and the stop's own words, queued behind, were never heard (a QA tester's
    live game). play hushes the announcer before its farewell."""
    from voicesnap.playback import SpeechStarted

    pb = VirtualPlayback(16000)
    ann = Announcer(cache, pb, Settings(), out=io.StringIO())
    rulings = [ann.say(f"Wrong call by Alice. {n} cards to the pool.", Priority.RULING, 0.0) for n in range(2, 8)]
    pb.advance_to(0.5)
    assert ann.hush() == len(rulings)
    stop = ann.say("Game stopped.", Priority.RULING, 0.5)
    pb.advance_to(15.0)
    started = {e.id: e.t for e in ann.poll() if isinstance(e, SpeechStarted)}
    assert set(started) == {rulings[0].id, stop.id}, started  # the first was playing: cut, not replayed
    assert started[stop.id] < 0.7
    assert all(end < 15.0 for _, end in ann.spoken.values()) and not ann.queue.active
