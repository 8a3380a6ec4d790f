"""Patent collections: corpus records and manifests (``corpus``), readers for real formats (``loaders``),
the generated demo corpus (``democorpus``) and the classification tables the taxonomy reads."""
