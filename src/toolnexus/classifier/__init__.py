"""The public Classifier and the factories that build one (``create_classifier``)."""
