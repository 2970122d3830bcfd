"""Reading a generated reply: the reasoning kept apart from the answer, then the answer's letter.

- :mod:`~mmspubench.eval.replies.reasoning`: a reply split into its reasoning and the text its
  answer is read from, by each family's markers (``<think>``, GLM's answer box, Kimi's
  ``◁think▷``), and the replies cut inside their reasoning (``truncated``, never parsed).
- :mod:`~mmspubench.eval.replies.parse`: the strict parser, answer text -> option letter (and the
  rule that named it), or ``None``.
- :mod:`~mmspubench.eval.replies.judge`: ``--extract judge``, a judge model on an OpenAI-compatible
  server that reads what the parser leaves unparsed (``Judge``, ``JudgeClient``, ``judge_for``).
"""
