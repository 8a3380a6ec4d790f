"""The examiner loop measured: what a hundred labels buy when the models are retrained from them.

``python -m train.loop.curves`` (the drawing learning curve), ``python -m train.loop.text`` (the text
curve), ``train.loop.text_scores`` (the text curve's figures)."""
