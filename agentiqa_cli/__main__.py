from agentiqa_cli.cli import main

main()
