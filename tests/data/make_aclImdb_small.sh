#!/bin/sh
# Rebuilds aclImdb_small.tar.gz from the folder aclImdb_small/ reproducibly (fixed order, owner and
# time, no gzip timestamp). The tests check that the two give the same reviews.
set -eu
cd "$(dirname "$0")"
tar --sort=name --mtime='2024-01-01 00:00Z' --owner=0 --group=0 --numeric-owner -C aclImdb_small -cf - aclImdb |
  gzip -n -9 >aclImdb_small.tar.gz
