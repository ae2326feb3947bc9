"""A mistyped command or action is answered with the one the user probably meant."""

from __future__ import annotations

import pytest

from ragpulse.cli import main


@pytest.mark.parametrize(
    ("argv", "meant"),
    [(["trace"], "'traces'"), (["repot"], "'report'"), (["jobs", "lst"], "'list'")],
)
def test_did_you_mean(argv: list[str], meant: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert f"did you mean {meant}?" in capsys.readouterr().err


def test_no_suggestion_for_a_word_unlike_any_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["xyzzy"])
    assert "did you mean" not in capsys.readouterr().err
