"""Load, fault and bad-input tests of the recipes on the fake NPU tier."""
