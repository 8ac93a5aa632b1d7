#!/bin/bash
sed -i 's|total(values) / (len(values) + 1)|total(values) / len(values)|' /app/calc/ops.py
