"""Head badges and summaries from hand-made scores whose labels are known."""

from __future__ import annotations

import numpy as np

from lessons import head_roles
from transformer.head_scores import SCORE_NAMES, HeadScores


def scores(**set_to) -> HeadScores:
    """Scores of a 2-layer × 3-head model, all 0.1 (no label) except the (name, layer, head) → value given."""
    arrays = {name: np.full((2, 3), 0.1) for name in SCORE_NAMES}
    for key, value in set_to.items():
        name, layer, head = key.rsplit("_", 2)
        arrays[name][int(layer), int(head)] = value
    return HeadScores(**arrays)


def test_badges_name_each_labelled_head_and_only_those():
    # 0.39 < 0.4: no badge
    s = scores(previous_token_0_1=0.9, first_token_0_1=0.7, induction_1_2=0.45, duplicate_token_1_0=0.39)
    assert head_roles.badges(s) == {(0, 1): "prev·sink", (1, 2): "ind"}
    assert head_roles.badges(s, short=True) == {(0, 1): "prev+", (1, 2): "ind"}  # a phone: the first, and "+"


def test_summary_gives_labels_and_every_defined_score():
    s = scores(self_token_1_1=0.8, induction_1_1=np.nan)  # NaN: the probe had no target for the score
    text = head_roles.summary(s, 1, 1)
    assert text.startswith("Layer 1, head 1: **self** head.")
    assert "self 0.80" in text and "previous token 0.10" in text
    assert "induction" not in text  # left out, not printed as nan
    assert "no label" in head_roles.summary(s, 0, 0)


def test_legend_states_every_badge_and_threshold():
    legend = head_roles.legend()
    assert "**prev** = previous-token score ≥ 0.5" in legend and "**ind** = induction score ≥ 0.4" in legend
    assert legend.count("**") == 2 * len(head_roles.BADGES)


def test_labelled_lists_the_heads_a_demo_switches_off_in_layer_order():
    s = scores(induction_1_2=0.45, induction_0_0=0.9, induction_1_0=0.39, first_token_0_1=0.5)  # 0.39: no label
    assert head_roles.labelled(s, "induction") == ["0.0", "1.2"]
    assert head_roles.labelled(s, "first-token (sink)") == ["0.1"] and head_roles.labelled(s, "previous-token") == []
    assert set(head_roles.DEMOS) <= set(head_roles.BADGES)  # every demo is a label the badges show
