"""Experience pool (EvoIR-Agent): which tool to trust per (mode, distortion category), learnt by multi-metric voting and a Bradley–Terry–Davidson ranking on the user's own images."""
