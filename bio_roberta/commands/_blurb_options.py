"""The option `bio-roberta report` and `bio-roberta blurb-suite` share, declared once."""


def add_score_any_split(parser):
    """--score-any-split, as `bio-roberta report` and `bio-roberta blurb-suite` take it."""
    parser.add_argument(
        "--score-any-split",
        action="store_true",
        help="score every dataset whose runs follow BLURB's metric whatever its split (re-split "
        "data, another release, toy files); the score is then marked not comparable with "
        "Table 6 and BLURB's leaderboard, naming each dataset whose split is not BLURB's or "
        "unchecked (default: such datasets are left out of the score)",
    )
