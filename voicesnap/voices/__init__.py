"""Players' voices: enrollment takes, saved profiles, and who said a call.

A profile holds what the model-free spotter and attribution need, all learnt
from the player's own takes: cepstral templates of each call phrase (matched
with subsequence DTW, so the whole call must align, which rejects most
near-miss words), a voiceprint (mean/spread of raw cepstra and pitch: the
"who" signal that cepstral mean removal would otherwise throw away), the
speaker encoder's embeddings when it is installed, and thresholds calibrated
leave-one-out among the takes themselves.

One module per part, in the order a call meets them:

- ``takes``: cutting a recording into takes, trimming and checking each one;
- ``templates``: DTW call templates and the voiceprint;
- ``profiles``: building a profile from takes, and saving and loading it;
- ``attribution``: ``Voices``, who of a table's players a stretch fits, or nobody;
- ``loudness``: a call shouted far louder than the takes, or past full scale;
- ``ties``: two players' calls mixed on one microphone;
- ``near_miss``: a word that differs from the call in its closing sounds.

The names below are the package's interface: the rest of voicesnap imports
them from here, and reaches into a part only for what that part alone knows.
"""

from __future__ import annotations

from .attribution import (ACCEPT, ACCEPT_SCORE, ANNOUNCER, ENC_CAP, ENC_DENOISED_MIN_SNR, ENC_MIN_AROUND,
                          ENC_MIN_SNR, ENC_SPEECH_CAP, ENC_WHAT_LIMIT, R_LIMIT, STRONG_VOICE, V_LIMIT, Attribution,
                          Voices, announcer_profile, load_voices, ratio_to_score)
from .near_miss import CONTRAST_RATIO, CONTRAST_TAKES, CONTRAST_WORDS
from .profiles import (PROFILE_VERSION, VOICE_SCALE_FLOOR, VOICE_THRESHOLD_FACTOR, Profile, build_profile,
                       check_name, contrast_as_call, contrast_extra, list_players, load_all, load_profile, load_profile_file, looped_extra,
                       missing_contrast, missing_speech, players_dir, profile_contrast, profile_embeddings, profile_looped,
                       profile_path, profile_speech, profile_takes, same_player, save_profile, set_speech, speech_extra,
                       speech_mismatch)
from .takes import (MIN_CALL_TAKES, MIN_POOL_TAKES, POOL_SUFFIX, SPEECH_MIN_SECONDS, Take, TakeProblem,
                    check_consistency, check_speech, check_take, pool_phrase, split_takes, trim)
from .templates import SKIP_PENALTY, STAY_PENALTY, Hit, TemplateBank, dtw_distance, take_templates, voiceprint
from .ties import Tie

__all__ = [
    "ACCEPT", "ACCEPT_SCORE", "ANNOUNCER", "ENC_CAP", "ENC_SPEECH_CAP", "ENC_DENOISED_MIN_SNR",
    "ENC_MIN_AROUND", "ENC_MIN_SNR", "ENC_WHAT_LIMIT", "R_LIMIT", "STRONG_VOICE", "V_LIMIT", "Attribution",
    "Voices", "announcer_profile", "load_voices", "ratio_to_score", "PROFILE_VERSION", "VOICE_SCALE_FLOOR",
    "VOICE_THRESHOLD_FACTOR", "Profile", "build_profile", "check_name", "contrast_extra", "list_players", "same_player",
    "load_all", "load_profile", "load_profile_file", "missing_contrast", "missing_speech", "players_dir",
    "profile_contrast", "profile_embeddings", "profile_looped", "looped_extra", "profile_path", "contrast_as_call",
    "profile_speech", "profile_takes", "save_profile", "set_speech", "speech_extra", "speech_mismatch", "MIN_CALL_TAKES",
    "MIN_POOL_TAKES", "POOL_SUFFIX", "SPEECH_MIN_SECONDS", "Take", "TakeProblem", "check_consistency",
    "check_speech", "check_take", "pool_phrase", "split_takes", "trim", "SKIP_PENALTY", "STAY_PENALTY", "Hit",
    "TemplateBank", "dtw_distance", "CONTRAST_RATIO", "CONTRAST_TAKES", "CONTRAST_WORDS", "take_templates",
    "voiceprint", "Tie",
]
