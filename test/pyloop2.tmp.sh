for h in 1 2; do node -e 'for(;;){}' & done
f=0
for i in $(seq 1 12); do
  out=$(node --import tsx --test --test-force-exit test/process/python-client.test.ts 2>&1)
  if ! echo "$out" | grep -q "^# fail 0"; then f=$((f+1)); echo "$out" | grep -E "^\s+(E |>|FAILED)" | head -30; fi
done
echo fails $f
kill %1 %2
