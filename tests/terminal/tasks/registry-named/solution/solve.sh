#!/bin/bash
tac /app/lines.txt > /app/reversed.txt
