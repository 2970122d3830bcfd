"""The curation pipeline of the paper (section 4.2): select with CLIP, annotate with a model,
review by people, export a raw release.

``select`` keeps the images whose true class zero-shot CLIP ranks outside its top ``k`` but
inside its top ``l``; ``annotate`` asks a vision-language model for attributes, types and a
question under a JSON schema; ``review`` is a Gradio app backed by an append-only SQLite audit
trail; ``export`` applies the reviews and writes a raw release that ``mmspubench build`` accepts.
"""
