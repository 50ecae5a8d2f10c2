"""Tests of neardup."""
