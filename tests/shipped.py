"""What the project ships that tests read: the judge specs in judges/ (and the slugs they define) and the
EVA judge fixture."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JUDGES = ROOT / "judges"
SHIPPED_SLUGS = {"conciseness", "speakability", "tts_fidelity", "faithfulness", "language_clarity", "turn_rubric"}
EVA_FIXTURE = ROOT / "tests" / "fixtures" / "eva_judges.yaml"
