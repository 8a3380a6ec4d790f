"""The result reports: the tables and pages written from the JSON the training and evaluation commands save."""
