package emit

import (
	"github.com/bridgekit/bridgekit/generator/internal/catalogue"
	"github.com/bridgekit/bridgekit/generator/internal/naming"
)

func goName(s string) string { return naming.Go(s) }

type catalogueError = catalogue.Error
