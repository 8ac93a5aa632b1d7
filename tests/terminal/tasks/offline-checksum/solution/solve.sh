#!/bin/bash
md5sum /app/blob.bin > /app/blob.md5
