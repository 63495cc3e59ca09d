"""The demo data: a fictional company over four years (`files/`, listed with their dates
in `dataset.py`), loaded into the demo tenant through the normal upload path (`load.py`),
and what a true graph of it holds (`answer_key.toml`)."""
