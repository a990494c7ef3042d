"""Measuring: finding and provisioning interpreters, their environments, the run spec, planning
rounds, the lockstep workers, sampling, the phase probe and the counting pass."""
