#!/bin/bash
python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' > /tmp/python-version.txt
