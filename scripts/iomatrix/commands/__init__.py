"""Commands built on the stages below: release, crosscheck, sensitivity and agree."""
