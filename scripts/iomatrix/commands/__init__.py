"""Commands built on the stages below: compare, release, history, agree, bisect, upstream,
changelogs, crosscheck and sensitivity, with their helper modules."""
