"""Helpers of upstream's `horovod.runner.util` that user and test code import."""
