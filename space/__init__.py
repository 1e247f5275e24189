"""salon_paint: the client side of the environment (salon.train.env.client)."""
