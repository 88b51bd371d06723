"""Questions and plans (docs/questions.md): what a run may ask, whether an answer fits, a plan as safe HTML."""
