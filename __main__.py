"""Pulumi program: one GPU-ready EKS cluster per stack (settings in stacks/Pulumi.<stack>.yaml)."""

from components.program import main

main()
