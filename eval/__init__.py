"""Scoring of vision-language models on MM-SpuBench: accuracy per type and CGL/CGLA."""
