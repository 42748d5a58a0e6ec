"""IQA tools: YAML tool cards, logistic normalization, signal detectors, execution."""
