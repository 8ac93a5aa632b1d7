#!/bin/bash
# Runs at build time (its exec bit is part of the build context).
for i in $(seq 1 12); do echo "line $i of 12"; done
