"""How the configs resolve: the OmegaConf resolvers they use (``resolvers``: ``${package_path:...}``,
``${offline_model:...}``, ``${run_id:}`` and the others), registered before Hydra composes."""
