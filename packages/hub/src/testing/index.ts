export {
  createFakeHub,
  filesFromDirectory,
  type FakeHub,
  type FakeHubContent,
  type FakeHubFault,
  type FakeHubFileInfo,
  type FakeHubOptions,
  type FakeHubRepoInput,
  type FakeHubRequest,
} from './fake-hub.js'
