#!/bin/bash
# GREETING comes from [solution.env].
echo "${GREETING:?GREETING should be set by [solution.env]}" > /app/greeting.txt
