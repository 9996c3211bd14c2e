from gateway.server import cli

cli()
